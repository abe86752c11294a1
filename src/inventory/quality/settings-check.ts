import type { AppContext } from '../../context.js';
import { AppError, validationFailed } from '../../platform/errors.js';
import { standingMatch } from '../queries/service.js';
import { fieldOf } from './plan.js';
import { pathMatch } from './planning.js';
import type { QualitySettings } from './settings.js';

/** The columns an owner may be read from beside JSON paths. */
const OWNER_COLUMNS = new Set(['name', 'namespace', 'ci_type', 'scope_id', 'external_id']);

/** A check that fails names the setting it is in: `completeness.k8s.pod.required[1]`. */
async function within<T>(setting: string, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (error) {
    if (error instanceof AppError && error.code === 'INVALID_QUERY')
      throw new AppError(422, 'INVALID_QUERY', `${setting}: ${error.message}`, { ...error.details, setting });
    throw error;
  }
}

/** Every path and condition of the settings parses as the query language's standing matches; 422 otherwise. */
export async function checkSettings(app: AppContext, settings: QualitySettings): Promise<void> {
  const owner = fieldOf(await within('owner_path', () => pathMatch(app, settings.owner_path)));
  const json = owner.name === 'raw_data' || owner.name === 'type_data';
  if ((json && owner.path.length === 0) || (!json && (!OWNER_COLUMNS.has(owner.name) || owner.path.length > 0)))
    throw validationFailed([
      {
        field: 'owner_path',
        location: 'body',
        message: `must be a path under raw_data or type_data, or one of ${[...OWNER_COLUMNS].join(', ')}`,
      },
    ]);
  for (const [type, paths] of Object.entries(settings.completeness)) {
    for (const kind of ['required', 'recommended'] as const)
      for (const [i, path] of paths[kind].entries())
        await within(`completeness.${type}.${kind}[${i}]`, () => pathMatch(app, path));
  }
  for (const [type, rules] of Object.entries(settings.required_relationships)) {
    for (const [i, rule] of rules.entries())
      if (rule.when) await within(`required_relationships.${type}[${i}].when`, () => standingMatch(app, rule.when!));
  }
}
