import { uuidv7 } from 'uuidv7';
import type { Principal } from '../auth/principal.js';
import { checkedAsOf } from '../configuration-items/service.js';
import type { AppContext } from '../context.js';
import { conflict, notFound, validationFailed } from '../errors.js';
import { MAX_BASELINES_PER_TENANT, type NewBaseline } from './schema.js';
import { deleteBaseline, findBaselineByName, insertBaseline, listBaselines, lockAndCountBaselines, type BaselineRow } from './store.js';

export type { BaselineRow } from './store.js';

/** What reads as a moment: a name cannot start like it (see BaselineName). */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}/;
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

export function baselinesOf(app: AppContext, principal: Principal): Promise<BaselineRow[]> {
  return listBaselines(app.sql, principal.tenantId);
}

/** Who named a baseline, as a person reads it in the list. */
const nameOf = (principal: Principal): string => (principal.user ? principal.user.email ?? principal.user.name : `key ${principal.name}`);

/** Names a moment (default now) under a name the tenant has not used; at most MAX_BASELINES_PER_TENANT. */
export async function createBaseline(app: AppContext, principal: Principal, body: NewBaseline): Promise<BaselineRow> {
  if (TIMESTAMP.test(body.name)) {
    throw validationFailed([{ field: 'name', location: 'body', message: 'must not start like a date (YYYY-MM-DD): diffs read such a value as a moment' }]);
  }
  const now = app.now();
  const at = body.at === undefined ? now.toISOString() : await checkedAsOf(app, body.at, 'at', 'body');
  if (Date.parse(at) > now.getTime()) {
    throw validationFailed([{ field: 'at', location: 'body', message: 'a baseline names a moment that has happened: not later than now' }]);
  }
  return app.sql.begin(async (tx) => {
    if ((await lockAndCountBaselines(tx, principal.tenantId)) >= MAX_BASELINES_PER_TENANT) {
      throw conflict(`At most ${MAX_BASELINES_PER_TENANT} baselines per tenant: delete one first`, { limit: MAX_BASELINES_PER_TENANT });
    }
    const row = await insertBaseline(tx, principal.tenantId, { id: uuidv7(), name: body.name, at, createdAt: now, createdBy: nameOf(principal) });
    if (!row) throw conflict(`A baseline named "${body.name}" exists already`, { name: body.name });
    return row;
  });
}

export async function removeBaseline(app: AppContext, principal: Principal, id: string): Promise<void> {
  if (!(await deleteBaseline(app.sql, principal.tenantId, id))) throw notFound('Baseline not found', { baseline_id: id });
}


/**
 * A moment as a diff takes it: an ISO 8601 timestamp, or the name of one of the tenant's
 * baselines (names cannot start like a date, see BaselineName). Checked against the history's
 * earliest moment either way (a baseline can outlive the history it named).
 */
export async function resolveMoment(app: AppContext, principal: Principal, field: string, value: string): Promise<string> {
  if (TIMESTAMP.test(value)) {
    if (!RFC_3339.test(value)) {
      throw validationFailed([{ field, location: 'query', message: 'must be an ISO 8601 timestamp with time and offset (2026-11-27T08:00:00Z) or the name of a baseline' }]);
    }
    return checkedAsOf(app, value, field);
  }
  const baseline = await findBaselineByName(app.sql, principal.tenantId, value);
  if (!baseline) {
    throw validationFailed([{ field, location: 'query', message: `neither an ISO 8601 timestamp nor the name of a baseline: "${value}"` }]);
  }
  return checkedAsOf(app, baseline.at_exact, field);
}
