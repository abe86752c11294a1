import type { Sql } from 'postgres';
import type { Fragment } from '../auth/scope.js';
import { databaseFailure } from '../db/failures.js';

export interface Count {
  total: number;
  /** False when the exact count took too long and `total` is the planner's estimate. */
  exact: boolean;
}

/**
 * Counts the rows of `rowsQuery` (a `select 1 from ... where ...`) under a statement timeout; when
 * the count takes longer, answers the planner's estimate of the same rows instead, so a total
 * never costs more than `timeoutMs`. (The embedded database cannot interrupt a statement: there
 * the count is always exact.)
 */
export async function countWithin(sql: Sql, rowsQuery: Fragment, timeoutMs: number): Promise<Count> {
  return sql.begin(async (tx) => {
    await tx`select set_config('statement_timeout', ${String(timeoutMs)}, true)`;
    try {
      const [row] = await tx.savepoint((sp) => sp<{ count: string }[]>`select count(*) from (${rowsQuery}) as counted`);
      return { total: Number(row?.count ?? 0), exact: true };
    } catch (error) {
      if (databaseFailure(error) !== 'timeout') throw error;
    }
    const [plan] = await tx<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[]>`explain (format json) ${rowsQuery}`;
    return { total: Math.round(plan!['QUERY PLAN'][0].Plan['Plan Rows']), exact: false };
  });
}
