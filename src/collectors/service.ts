import type { Principal } from '../auth/principal.js';
import type { AppContext } from '../context.js';
import { notFound } from '../http/errors.js';
import { bigintId } from '../http/schemas.js';
import { listCollectors, type CollectorRow } from './store.js';

/** The live collector a principal may see, or a 404. */
export async function collectorOr404(app: AppContext, principal: Principal, rawId: string): Promise<CollectorRow> {
  const id = bigintId(rawId);
  const found = id === undefined ? undefined : (await listCollectors(app.sql, principal, { id, limit: 1, offset: 0 })).rows[0];
  if (!found) throw notFound('Collector not found', { collector_id: rawId });
  return found;
}
