import type { AppContext } from '../../context.js';
import { CatchUpLoop } from '../../platform/workers.js';
import type { Queryable, Sql } from '../../platform/db/database.js';
import { mayObserve } from './facets.js';
import { resolveIdentities } from './resolve.js';
import {
  analyzeIdentities,
  cisById,
  feedAfter,
  feedEndPosition,
  observingCisAfter,
  progress,
  saveBackfill,
  saveProgress,
  startBackfill,
} from './resolve-store.js';

/** Change records read per transaction. */
const SCAN = 500;

/**
 * One step of the identity worker, in one transaction: after the first start, a page of the
 * stored CIs that may observe a host (the backfill) until they are done; then the next records of
 * the change feed, the CIs they name read as they are now and resolved tenant by tenant. The worker's place moves in the
 * same transaction, so a crash repeats a step rather than losing one (resolution is idempotent).
 * Returns how many records or CIs it read; 0 when caught up, or when another process holds the turn.
 */
export async function identityStep(sql: Sql, now: Date): Promise<number> {
  return sql.begin(async (tx) => {
    const [turn] = await tx<
      { ok: boolean }[]
    >`select pg_try_advisory_xact_lock(hashtext('cinv.identity-worker')) as ok`;
    if (!turn?.ok) return 0;
    const place = await progress(tx);
    if (!place) {
      // past every record committed before the backfill began; later ones are read from the feed
      await startBackfill(tx, await feedEndPosition(tx));
      return 1;
    }
    if (place.backfill_after !== null) return backfillPage(tx, place.backfill_after, now);
    const rows = await feedAfter(tx, place.position, place.record_id, SCAN);
    if (rows.length === 0) return 0;
    await resolveNamed(
      tx,
      rows.filter((r) => mayObserve(r.ci_type)),
      now,
    );
    const last = rows[rows.length - 1]!;
    await saveProgress(tx, last.position, last.record_id);
    return rows.length;
  });
}

/** One page of the first start's backfill: stored CIs that may observe a host, by id. */
async function backfillPage(tx: Queryable, after: string, now: Date): Promise<number> {
  const page = await observingCisAfter(tx, after, SCAN);
  await resolveNamed(tx, page, now);
  const done = page.length < SCAN;
  await saveBackfill(tx, done ? null : page[page.length - 1]!.ci_id);
  if (done) await analyzeIdentities(tx);
  return Math.max(page.length, 1);
}

async function resolveNamed(tx: Queryable, named: readonly { tenant_id: string; ci_id: string }[], now: Date) {
  const byTenant = new Map<string, Set<string>>();
  for (const row of named) byTenant.set(row.tenant_id, (byTenant.get(row.tenant_id) ?? new Set()).add(row.ci_id));
  for (const [tenantId, ids] of byTenant) {
    const cis = (await cisById(tx, [...ids])).filter((ci) => ci.tenant_id === tenantId);
    const found = new Set(cis.map((ci) => ci.ci_id));
    await resolveIdentities(
      tx,
      tenantId,
      cis,
      [...ids].filter((id) => !found.has(id)),
      now,
    );
  }
}

/** Runs steps until the worker is caught up with the feed; returns the records read. */
export async function catchUpIdentities(sql: Sql, now: () => Date): Promise<number> {
  let total = 0;
  for (;;) {
    const read = await identityStep(sql, now());
    if (read === 0) return total;
    total += read;
  }
}

/**
 * The identity worker: catches up with the change feed every `pollMs`. Identities trail the
 * inventory by at most about one interval; nothing on the write path waits for them.
 */
export class IdentityWorker extends CatchUpLoop {
  constructor(app: AppContext, pollMs: number) {
    super(pollMs, () => catchUpIdentities(app.sql, app.now), app.logger, {
      done: 'identities resolved',
      failed: 'identity resolution failed',
    });
  }
}
