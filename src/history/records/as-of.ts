import type { Sql } from 'postgres';
import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';

/** A CI row as it was stored at a moment. */
export interface CiState {
  ci_id: string;
  tenant_id: string;
  source_id: string;
  scope_id: string | null;
  external_id: string;
  ci_type: string;
  name: string;
  namespace: string | null;
  status: 'active' | 'inactive' | 'archived';
  status_updated_at: Date | null;
  raw_data: Record<string, unknown>;
  type_data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface AtMoment {
  /** Which rows may be read at all, as they are now and as they were (the principal's scopes). */
  visible: (row: string) => Fragment;
  /**
   * A condition on the row as it was (filters, a keyset position); `rebuilt` when the rows it
   * applies to were taken back, not read through the indexes.
   */
  where?: (row: string, rebuilt: boolean) => Fragment;
  /**
   * A condition on what never changes (the CI's id), applied to the rows as they are, so that a
   * read of one CI looks up one row, not every row written since.
   */
  key?: (row: string) => Fragment;
}

/**
 * The CIs as they were at `at`, as a FROM item with configuration_items' columns: the rows
 * unchanged since (read as they are, through every index), the rows written since (taken back by
 * cinv_ci_at, sql/0020_state_at.sql) and the rows removed since (their tombstones, taken back the
 * same way). Conditions apply inside each part, so a filter or a keyset position narrows each
 * before anything is merged. A CI is there when it was created by then and not yet removed.
 *
 * The rows to take back are chosen in a subquery of their own (`offset 0` keeps the planner from
 * pulling it up): left to itself it took back every candidate first and asked whether it had been
 * written since after (the query bench's as_of a day back: 8 533 deployments rebuilt, 3.8 s, to
 * keep none of them).
 */
export function cisAt(sql: Sql, at: string, alias: string, { visible, where, key }: AtMoment): Fragment {
  const moment = sql`${at}::text::timestamptz`;
  const a = sql(alias);
  const also = (condition: ((row: string, rebuilt: boolean) => Fragment) | undefined, row: string, rebuilt = false) =>
    condition ? sql`and ${condition(row, rebuilt)}` : sql``;
  return sql`(
    select ${a}.* from configuration_items ${a}
    where ${visible(alias)} and ${a}.created_at <= ${moment} ${also(key, alias)}
      and not exists (select 1 from ci_undo u where u.tenant_id = ${a}.tenant_id and u.ci_id = ${a}.ci_id and u.at > ${moment})
      ${also(where, alias)}
    union all
    select ${a}.* from (
      select now_.* from configuration_items now_
      where ${visible('now_')} and now_.created_at <= ${moment} ${also(key, 'now_')}
        and exists (select 1 from ci_undo u where u.tenant_id = now_.tenant_id and u.ci_id = now_.ci_id and u.at > ${moment})
      offset 0) now_
    cross join lateral cinv_ci_at(to_jsonb(now_), ${moment}) ${a}
    where ${visible(alias)} ${also(where, alias, true)}
    union all
    select ${a}.* from (
      select gone.* from ci_tombstones gone
      where ${visible('gone')} and gone.created_at <= ${moment} and gone.removed_at > ${moment} ${also(key, 'gone')}
      offset 0) gone
    cross join lateral cinv_ci_at(to_jsonb(gone) - 'removed_at', ${moment}) ${a}
    where ${visible(alias)} ${also(where, alias, true)}
  )`;
}

/**
 * Whether the CI as it is now, or as it was when removed, lies inside the principal's data scopes.
 * A read of the past shows a scoped principal a CI inside its scopes both then and now (see
 * cisAt); where the row then comes from elsewhere (a version, a write's record), this is the now.
 */
export function visibleNow(sql: Sql, principal: Principal, ciId: Fragment): Fragment {
  if (seesAllData(principal)) return sql`true`;
  return sql`(exists (select 1 from configuration_items n where n.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('n'))})
              or exists (select 1 from ci_tombstones n where n.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('n'))}))`;
}

const STATE_COLUMNS = (sql: Sql, alias: string) => {
  const a = sql(alias);
  return sql`${a}.ci_id, ${a}.tenant_id, ${a}.source_id::text as source_id, ${a}.scope_id, ${a}.external_id, ${a}.ci_type,
             ${a}.name, ${a}.namespace, ${a}.status, ${a}.status_updated_at, ${a}.raw_data, ${a}.type_data,
             ${a}.created_at, ${a}.updated_at`;
};

/**
 * The CI as it was stored at `at` (ISO 8601), or undefined when it did not exist then, or lies
 * outside the principal's data scopes now or then.
 */
export async function ciStateAt(
  sql: Sql,
  principal: Principal,
  ciId: string,
  at: string,
): Promise<CiState | undefined> {
  const [found] = await sql<CiState[]>`
    select ${STATE_COLUMNS(sql, 'ci')} from ${cisAt(sql, at, 'ci', {
      visible: (row) => visibleTo(sql, principal, columnsOf(row)),
      key: (row) => sql`${sql(row)}.ci_id = ${ciId}`,
    })} ci`;
  return found;
}

/** The moment from which the inventory can be read as it was (sql/0019: an installation's upgrade). */
export async function exactSince(sql: Sql): Promise<Date | null> {
  const [row] = await sql<{ exact_since: Date | null }[]>`
    select case when exact_since = '-infinity' then null else exact_since end as exact_since from time_machine`;
  return row?.exact_since ?? null;
}
