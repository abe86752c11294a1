import type { Queryable } from '../../platform/db/database.js';
import { jsonText } from '../../platform/db/pipeline.js';

/** The fold window when a tenant has set none (docs/readable-changes.md). */
export const DEFAULT_FOLD_WINDOW_SECONDS = 3600;

/** The tenant's fold window in seconds (change_settings, or the default). */
export async function foldWindowOf(sql: Queryable, tenantId: string): Promise<number> {
  const [row] = await sql<{ fold_window_seconds: number }[]>`
    select fold_window_seconds from change_settings where tenant_id = ${tenantId}`.execute();
  return row?.fold_window_seconds ?? DEFAULT_FOLD_WINDOW_SECONDS;
}

/** What folding reads and sets of a record about to be written. */
export interface Foldable {
  tenant_id: string;
  ci_id: string;
  change_type: string;
  changed_at: Date;
  changes: readonly unknown[];
  fingerprint: string;
  fold_at?: Date | null;
}

interface Head {
  ci_id: string;
  fingerprint: string;
  fold_at: Date;
}

const keyOf = (ciId: string, fingerprint: string) => `${ciId} ${fingerprint}`;

/**
 * Puts each record into its fold before it is written: an update with the fingerprint of a fold
 * of its CI opened less than the tenant's window before it joins that fold (its `fold_at` is the
 * fold's first time, and the fold's repeat count and last time move); any other record opens one.
 * A creation, a deletion or a status move of the CI ends its open folds, so a fold never crosses a
 * CI's removal or its return.
 * Records are taken in time order, so repeats within one batch fold too. Call it in the
 * transaction that writes the records, with the records of one tenant.
 */
export async function assignFolds(sql: Queryable, tenantId: string, records: readonly Foldable[]): Promise<void> {
  const ciIds = [...new Set(records.map((r) => r.ci_id))];
  const rows = await sql<(Head & { window_seconds: number })[]>`
    select h.ci_id, h.fingerprint, h.fold_at,
           coalesce((select fold_window_seconds from change_settings where tenant_id = ${tenantId}), ${DEFAULT_FOLD_WINDOW_SECONDS}) as window_seconds
    from (select 1) one
    left join change_fold_heads h on h.tenant_id = ${tenantId} and h.ci_id = any(${ciIds}::uuid[])`.execute();
  const windowMs = (rows[0]?.window_seconds ?? DEFAULT_FOLD_WINDOW_SECONDS) * 1000;
  const heads = new Map<string, Date>();
  for (const row of rows) if (row.ci_id) heads.set(keyOf(row.ci_id, row.fingerprint), new Date(row.fold_at));
  const ended = new Set<string>();
  const opened = new Map<string, Head>();
  const repeats = new Map<string, { head: Head; repeats: number; last: Date }>();
  for (const record of [...records].sort((a, b) => a.changed_at.getTime() - b.changed_at.getTime())) {
    record.fold_at = null;
    // a creation, a removal or a move of its status (gone, back) starts a new life of the CI: no fold crosses it
    if (record.change_type !== 'UPDATED' || record.changes.some((c) => (c as { field?: string }).field === 'status')) {
      ended.add(record.ci_id);
      for (const key of [...heads.keys()]) if (key.startsWith(`${record.ci_id} `)) heads.delete(key);
      for (const [key, head] of opened) if (head.ci_id === record.ci_id) opened.delete(key);
      continue;
    }
    if (record.changes.length === 0) continue;
    const key = keyOf(record.ci_id, record.fingerprint);
    const head = heads.get(key);
    const at = record.changed_at.getTime();
    if (head && at >= head.getTime() && at - head.getTime() <= windowMs) {
      record.fold_at = head;
      const foldKey = `${key} ${head.toISOString()}`;
      const fold = repeats.get(foldKey) ?? {
        head: { ci_id: record.ci_id, fingerprint: record.fingerprint, fold_at: head },
        repeats: 0,
        last: head,
      };
      fold.repeats += 1;
      if (record.changed_at > fold.last) fold.last = record.changed_at;
      repeats.set(foldKey, fold);
    } else if (!head || at > head.getTime()) {
      heads.set(key, record.changed_at);
      opened.set(key, { ci_id: record.ci_id, fingerprint: record.fingerprint, fold_at: record.changed_at });
    }
  }
  await writeFolds(sql, tenantId, [...ended], [...opened.values()], [...repeats.values()]);
}

async function writeFolds(
  sql: Queryable,
  tenantId: string,
  ended: string[],
  opened: Head[],
  repeats: { head: Head; repeats: number; last: Date }[],
): Promise<void> {
  if (ended.length === 0 && opened.length === 0 && repeats.length === 0) return;
  const openedJson = jsonText(opened.map((h) => ({ ...h, fold_at: h.fold_at.toISOString() })));
  const repeatsJson = jsonText(
    repeats.map((f) => ({
      ...f.head,
      fold_at: f.head.fold_at.toISOString(),
      repeats: f.repeats,
      last_at: f.last.toISOString(),
    })),
  );
  // a CI removed and created again in one batch: its heads go before the new ones are written
  if (ended.length > 0)
    await sql`delete from change_fold_heads where tenant_id = ${tenantId} and ci_id = any(${ended}::uuid[])`.execute();
  await sql`
    with opened as (
      insert into change_fold_heads (tenant_id, ci_id, fingerprint, fold_at)
      select ${tenantId}, o.ci_id, o.fingerprint, o.fold_at
      from jsonb_to_recordset(${openedJson}::text::jsonb) as o(ci_id uuid, fingerprint text, fold_at timestamptz)
      order by 2, 3
      on conflict (tenant_id, ci_id, fingerprint) do update set fold_at = excluded.fold_at
    )
    insert into change_folds (tenant_id, ci_id, fingerprint, fold_at, repeats, last_at)
    select ${tenantId}, f.ci_id, f.fingerprint, f.fold_at, f.repeats, f.last_at
    from jsonb_to_recordset(${repeatsJson}::text::jsonb) as f(ci_id uuid, fingerprint text, fold_at timestamptz, repeats int, last_at timestamptz)
    order by 2, 3, 4
    on conflict (tenant_id, ci_id, fingerprint, fold_at)
      do update set repeats = change_folds.repeats + excluded.repeats, last_at = greatest(change_folds.last_at, excluded.last_at)`.execute();
}

/** The longest fold window a tenant may set (change_settings): past it no head can be joined. */
export const MAX_FOLD_WINDOW_SECONDS = 604_800;

/** Forgets the open folds no record can join any more, in batches; returns how many. */
export async function forgetClosedFolds(sql: Queryable, now: Date, batchSize: number): Promise<number> {
  const before = new Date(now.getTime() - MAX_FOLD_WINDOW_SECONDS * 1000);
  let total = 0;
  for (;;) {
    const [row] = await sql<{ n: number }[]>`
      with gone as (
        delete from change_fold_heads h
        where (h.tenant_id, h.ci_id, h.fingerprint) in (
          select tenant_id, ci_id, fingerprint from change_fold_heads where fold_at < ${before} limit ${batchSize})
        returning 1)
      select count(*)::int as n from gone`.execute();
    total += row?.n ?? 0;
    if ((row?.n ?? 0) < batchSize) return total;
  }
}
