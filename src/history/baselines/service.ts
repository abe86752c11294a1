import { uuidv7 } from 'uuidv7';
import { mayActOnOwned, ownerOf, type Owner } from '../../platform/auth/owners.js';
import type { Principal } from '../../platform/auth/principal.js';
import { checkedAsOf } from '../../inventory/configuration-items/service.js';
import type { AppContext } from '../../context.js';
import { conflict, forbidden, notFound, validationFailed } from '../../platform/errors.js';
import { MAX_BASELINES_PER_TENANT, type NewBaseline } from './schema.js';
import {
  deleteBaseline,
  findBaseline,
  findBaselineByName,
  insertBaseline,
  listBaselines,
  lockAndCountBaselines,
  type BaselineRow,
} from './store.js';

export type { BaselineRow } from './store.js';

/** What reads as a moment: a name cannot start like it (see BaselineName). */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}/;
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

export function baselinesOf(app: AppContext, principal: Principal): Promise<BaselineRow[]> {
  return listBaselines(app.sql, principal.tenantId);
}

/** Who named a baseline, as a person reads it in the list. */
const nameOf = (principal: Principal): string =>
  principal.user ? (principal.user.email ?? principal.user.name) : `key ${principal.name}`;

/** Names a moment (default now) under a name the tenant has not used; at most MAX_BASELINES_PER_TENANT. */
export async function createBaseline(app: AppContext, principal: Principal, body: NewBaseline): Promise<BaselineRow> {
  if (TIMESTAMP.test(body.name)) {
    throw validationFailed([
      {
        field: 'name',
        location: 'body',
        message: 'must not start like a date (YYYY-MM-DD): diffs read such a value as a moment',
      },
    ]);
  }
  const now = app.now();
  const at = body.at === undefined ? now.toISOString() : await checkedAsOf(app, body.at, 'at', 'body');
  if (Date.parse(at) > now.getTime()) {
    throw validationFailed([
      { field: 'at', location: 'body', message: 'a baseline names a moment that has happened: not later than now' },
    ]);
  }
  return app.sql.begin(async (tx) => {
    if ((await lockAndCountBaselines(tx, principal.tenantId)) >= MAX_BASELINES_PER_TENANT) {
      throw conflict(`At most ${MAX_BASELINES_PER_TENANT} baselines per tenant: delete one first`, {
        limit: MAX_BASELINES_PER_TENANT,
      });
    }
    const row = await insertBaseline(tx, principal.tenantId, {
      id: uuidv7(),
      name: body.name,
      at,
      createdAt: now,
      createdBy: nameOf(principal),
      owner: ownerOf(principal),
    });
    if (!row) throw conflict(`A baseline named "${body.name}" exists already`, { name: body.name });
    return row;
  });
}

const ownerOfRow = (row: BaselineRow): Owner | null =>
  row.user_id !== null
    ? { userId: row.user_id, apiKeyId: null }
    : row.api_key_id !== null
      ? { userId: null, apiKeyId: row.api_key_id }
      : null;

/**
 * Deletes a baseline. Every reader of the inventory lists baselines and diffs against them, but
 * only the principal that named one, or a principal whose rights cover its owner's, deletes it
 * (403 otherwise); one named before owners were recorded belongs to principals with all data.
 */
export async function removeBaseline(app: AppContext, principal: Principal, id: string): Promise<void> {
  const row = await findBaseline(app.sql, principal.tenantId, id);
  if (!row) throw notFound('Baseline not found', { baseline_id: id });
  if (!(await mayActOnOwned(app.sql, principal, ownerOfRow(row)))) {
    throw forbidden('Only the owner of a baseline, or a principal holding all its owner holds, may delete it', {
      reason: 'not_owner',
      baseline_id: id,
    });
  }
  if (!(await deleteBaseline(app.sql, principal.tenantId, id)))
    throw notFound('Baseline not found', { baseline_id: id });
}

/**
 * A moment as a diff takes it: an ISO 8601 timestamp, or the name of one of the tenant's
 * baselines (names cannot start like a date, see BaselineName). Checked against the history's
 * earliest moment either way (a baseline can outlive the history it named).
 */
export async function resolveMoment(
  app: AppContext,
  principal: Principal,
  field: string,
  value: string,
): Promise<string> {
  if (TIMESTAMP.test(value)) {
    if (!RFC_3339.test(value)) {
      throw validationFailed([
        {
          field,
          location: 'query',
          message:
            'must be an ISO 8601 timestamp with time and offset (2026-11-27T08:00:00Z) or the name of a baseline',
        },
      ]);
    }
    return checkedAsOf(app, value, field);
  }
  const baseline = await findBaselineByName(app.sql, principal.tenantId, value);
  if (!baseline) {
    throw validationFailed([
      { field, location: 'query', message: `neither an ISO 8601 timestamp nor the name of a baseline: "${value}"` },
    ]);
  }
  return checkedAsOf(app, baseline.at_exact, field);
}
