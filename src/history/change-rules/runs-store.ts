import type { Sql } from 'postgres';

export interface RunRow {
  id: string;
  tenant_id: string;
  from_at: Date;
  until_at: Date;
  after_at: string | null;
  after_id: string | null;
  records: string;
  changed: string;
  created_at: Date;
  finished_at: Date | null;
}

const RUN_COLUMNS = (sql: Sql) =>
  sql`id, tenant_id, from_at, until_at, to_char(after_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as after_at,
      after_id::text, records::text, changed::text, created_at, finished_at`;

export async function startRun(
  sql: Sql,
  run: { id: string; tenantId: string; from: string; until: string; by: string },
): Promise<void> {
  await sql`
    insert into change_rule_runs (id, tenant_id, from_at, until_at, requested_by)
    values (${run.id}, ${run.tenantId}, ${run.from}::text::timestamptz, ${run.until}::text::timestamptz, ${run.by})`;
}

export async function runById(sql: Sql, tenantId: string, id: string): Promise<RunRow | undefined> {
  const [row] = await sql<RunRow[]>`
    select ${RUN_COLUMNS(sql)} from change_rule_runs where tenant_id = ${tenantId} and id = ${id}`;
  return row;
}

/** The oldest unfinished run, locked for this transaction (another worker takes the next one). */
export async function nextRun(sql: Sql): Promise<RunRow | undefined> {
  const [row] = await sql<RunRow[]>`
    select ${RUN_COLUMNS(sql)} from change_rule_runs
    where finished_at is null order by created_at, id limit 1 for update skip locked`;
  return row;
}

export interface BatchRecord {
  id: string;
  changed_at: string;
  ci_type: string;
  change_type: string;
  changes: string;
}

/** The run's next records by (changed_at, id), along the (tenant, changed_at, id) index. */
export function runBatch(sql: Sql, run: RunRow, size: number): Promise<BatchRecord[]> {
  const after = run.after_at
    ? sql`and (cr.changed_at, cr.id) > (${run.after_at}::text::timestamptz, ${run.after_id}::bigint)`
    : sql``;
  return sql<BatchRecord[]>`
    select cr.id::text, to_char(cr.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as changed_at,
           cr.ci_type, cr.change_type, cr.changes::text as changes
    from change_records cr
    cross join (select from_at, until_at from change_rule_runs where id = ${run.id}) w
    where cr.tenant_id = ${run.tenant_id} and cr.changed_at >= w.from_at and cr.changed_at < w.until_at ${after}
    order by cr.changed_at, cr.id
    limit ${size}`;
}

export async function moveRun(
  sql: Sql,
  run: RunRow,
  step: { last: BatchRecord | undefined; records: number; changed: number; finished: boolean },
): Promise<void> {
  await sql`
    update change_rule_runs
    set after_at = coalesce(${step.last?.changed_at ?? null}::text::timestamptz, after_at),
        after_id = coalesce(${step.last?.id ?? null}::bigint, after_id),
        records = records + ${step.records}, changed = changed + ${step.changed},
        finished_at = case when ${step.finished} then now() end
    where id = ${run.id}`;
}
