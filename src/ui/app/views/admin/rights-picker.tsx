import type { Me } from '../../lib/api';
import type { DataScope } from '../../lib/api-shapes';
import { useSourceNames } from '../../components/source-names';

const ALL_DATA: DataScope = { source_id: null, scope_id: null };
const sameScope = (a: DataScope, b: DataScope) => a.source_id === b.source_id && a.scope_id === b.scope_id;

/** Toggles one item of a list, keeping its order. */
function toggled<T>(list: readonly T[], item: T, on: boolean, same: (a: T, b: T) => boolean): T[] {
  const rest = list.filter((entry) => !same(entry, item));
  return on ? [...rest, item] : rest;
}

const checkedOf = (event: Event) => (event.currentTarget as HTMLInputElement).checked;

/**
 * The permissions a new key is to hold: the signed-in principal's own, and no others, since no one
 * grants more than they hold (the API refuses it anyway).
 */
export function PermissionsPicker({
  me,
  chosen,
  onChange,
}: {
  me: Me;
  chosen: readonly string[];
  onChange: (next: string[]) => void;
}) {
  const own = [...me.permissions].sort();
  return (
    <fieldset class="rights">
      <legend>Permissions</legend>
      {own.length === 0 ? <p class="meta">You hold no permissions to pass on.</p> : null}
      <div class="choices">
        {own.map((permission) => (
          <label key={permission}>
            <input
              type="checkbox"
              checked={chosen.includes(permission)}
              onChange={(event) => onChange(toggled(chosen, permission, checkedOf(event), (a, b) => a === b))}
            />{' '}
            {permission}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/**
 * The data a new key may see, inside the signed-in principal's own: all data or chosen sources for a
 * principal that sees everything, a choice among its own scopes otherwise.
 */
export function ScopesPicker({
  me,
  chosen,
  onChange,
}: {
  me: Me;
  chosen: readonly DataScope[];
  onChange: (next: DataScope[]) => void;
}) {
  const names = useSourceNames();
  const choices: DataScope[] =
    me.scopes === 'all'
      ? [ALL_DATA, ...[...names.keys()].map((id) => ({ source_id: String(id), scope_id: null }))]
      : me.scopes;
  const labelOf = (scope: DataScope) =>
    scope.source_id === null
      ? 'All data'
      : `${names.get(Number(scope.source_id)) ?? `source ${scope.source_id}`}${scope.scope_id === null ? ' (every instance)' : ` · ${scope.scope_id}`}`;
  return (
    <fieldset class="rights">
      <legend>Data it may see</legend>
      {chosen.length === 0 ? <p class="meta">Nothing chosen: the key would see no data.</p> : null}
      <div class="choices">
        {choices.map((scope) => (
          <label key={`${scope.source_id}:${scope.scope_id}`}>
            <input
              type="checkbox"
              checked={chosen.some((entry) => sameScope(entry, scope))}
              onChange={(event) => onChange(toggled(chosen, scope, checkedOf(event), sameScope))}
            />{' '}
            {labelOf(scope)}
          </label>
        ))}
      </div>
    </fieldset>
  );
}
