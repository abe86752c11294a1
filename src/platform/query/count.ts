import type { Sql } from 'postgres';
import type { Fragment } from '../auth/scope.js';
import { databaseFailure } from '../db/failures.js';

/** How totals are counted where they cannot be read from counts kept by the write path. */
export interface CountSettings {
  countTimeoutMs: number;
  /** The embedded database cannot interrupt a statement: counts there are exact, however long. */
  embedded: boolean;
}

export interface Count {
  total: number;
  /** False when the exact count took too long and `total` is the planner's estimate. */
  exact: boolean;
}

/**
 * Rows a count gets through per millisecond, conservatively: an estimate above `timeoutMs` times
 * this is not worth trying to count exactly (the attempt would only spend the timeout).
 */
const COUNTED_ROWS_PER_MS = 400;

/**
 * Counts the rows of `rowsQuery` (a `select 1 from ... where ...`) under a statement timeout; when
 * the planner expects more rows than can be counted in that time, or the count takes longer,
 * answers the planner's estimate instead. So a total never costs more than `timeoutMs` (plus an
 * EXPLAIN). The embedded database cannot interrupt a statement: there the count is always exact.
 */
export async function countWithin(sql: Sql, rowsQuery: Fragment, timeoutMs: number, embedded = false): Promise<Count> {
  return sql.begin(async (tx) => {
    const estimate = async () => {
      const [plan] = await tx<
        { 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[]
      >`explain (format json) ${rowsQuery}`;
      return Math.round(plan!['QUERY PLAN'][0].Plan['Plan Rows']);
    };
    if (!embedded) {
      const expected = await estimate();
      if (expected > timeoutMs * COUNTED_ROWS_PER_MS) return { total: expected, exact: false };
      await tx`select set_config('statement_timeout', ${String(timeoutMs)}, true)`;
    }
    try {
      const [row] = await tx.savepoint((sp) => sp<{ count: string }[]>`select count(*) from (${rowsQuery}) as counted`);
      return { total: Number(row?.count ?? 0), exact: true };
    } catch (error) {
      if (databaseFailure(error) !== 'timeout') throw error;
    }
    return { total: await estimate(), exact: false };
  });
}
