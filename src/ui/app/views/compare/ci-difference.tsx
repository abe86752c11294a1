import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../../lib/api';
import type { CiDiff } from '../../lib/api-shapes';
import { count, scalar } from '../../lib/format';
import { Link } from '../../lib/router';
import { DiffModePicker } from '../../components/change';
import { DiffView } from '../../components/diff-view';
import { Empty, Show, useLoad } from '../../components/states';

/** One CI between the two moments: its net field differences drawn as the timeline draws a change, and its relationships. */
export function CiDifference({ ciId, from, to, name }: { ciId: string; from: string; to: string; name?: string }) {
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const panel = useRef<HTMLElement>(null);
  // the list can be long: the chosen CI's difference is brought into view
  useEffect(() => panel.current?.scrollIntoView({ block: 'start' }), [ciId]);
  const loaded = useLoad(`${ciId} ${from} ${to}`, (signal) =>
    api<CiDiff>(`/api/v1/configuration-items/${encodeURIComponent(ciId)}/diff`, { query: { from, to }, signal }),
  );
  return (
    <section ref={panel} class="ci-difference" aria-labelledby="ci-difference-heading">
      <div class="section-head">
        <h2 id="ci-difference-heading">{name ?? 'Configuration item'} between the two moments</h2>
        <DiffModePicker mode={mode} setMode={setMode} />
      </div>
      <Show loaded={loaded} what="the difference">
        {(diff) => (
          <>
            <p class="meta">
              {diff.existed.from ? 'Existed' : 'Did not exist'} at the earlier moment,{' '}
              {diff.existed.to ? 'existed' : 'did not exist'} at the later. {count(diff.changes.total)} change record
              {diff.changes.total === 1 ? '' : 's'} in between: <Link href={`/ci/${ciId}`}>see its timeline</Link>.
            </p>
            {diff.fields.length === 0 ? <Empty>No field differs.</Empty> : null}
            {diff.fields.map((field) => (
              <section key={field.field} class="field-diff">
                <h3>
                  <code>{field.field}</code>
                </h3>
                <DiffView field={field.field} before={field.old_value} after={field.new_value} mode={mode} />
              </section>
            ))}
            {(['added', 'removed'] as const).map((which) =>
              diff.relationships[which].length > 0 ? (
                <section key={which}>
                  <h3>Relationships {which}</h3>
                  <ul class="neighbours">
                    {diff.relationships[which].map((edge) => (
                      <li key={edge.id}>
                        {edge.direction === 'outgoing' ? `${edge.relationship_type} →` : `← ${edge.relationship_type}`}{' '}
                        <Link
                          href={`/ci/${edge.related_ci_id}?as_of=${encodeURIComponent(which === 'added' ? to : from)}`}
                        >
                          {scalar(edge.related_ci_id)}
                        </Link>
                      </li>
                    ))}
                  </ul>
                </section>
              ) : null,
            )}
          </>
        )}
      </Show>
    </section>
  );
}
