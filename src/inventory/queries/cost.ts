import type { Sql } from 'postgres';
import type { AppContext } from '../../context.js';
import { can } from '../../platform/auth/principal.js';
import { unprocessable } from '../../platform/errors.js';
import type { Query } from '../../platform/query-language/ast.js';
import type { PredicateContext } from './predicates.js';
import { aggregateStatement, pageStatement, planOf, type AggregateShape, type PageShape } from './store.js';
import { siblingPartitions, tableSizes } from './types-store.js';

/** One read of a table in the plan, for people: how it reads, what it expects to find. */
export interface PlanStep {
  /** `index` (through an index), `scan` (the whole table), `other`. */
  access: 'index' | 'scan' | 'other';
  node: string;
  table: string;
  index: string | null;
  /** The condition the planner applies there, as PostgreSQL writes it. */
  condition: string | null;
  estimated_rows: number;
}

export interface CostReport {
  /** `light`, `moderate` or `heavy`, from the planner's total cost. */
  rating: 'light' | 'moderate' | 'heavy';
  total_cost: number;
  estimated_rows: number;
  steps: PlanStep[];
  /** Tables the plan reads whole although they hold more than CINV_QUERY_SCAN_ROWS rows. */
  scans: { table: string; rows: number }[];
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Filter?: string;
  'Plan Rows': number;
  'Total Cost': number;
  Plans?: PlanNode[];
}

function stepsOf(node: PlanNode, out: PlanStep[] = []): PlanStep[] {
  if (node['Relation Name'] || node['Index Name']) {
    const type = node['Node Type'];
    out.push({
      access: type === 'Seq Scan' ? 'scan' : /Index|Bitmap/.test(type) ? 'index' : 'other',
      node: type,
      table: node['Relation Name'] ?? '',
      index: node['Index Name'] ?? null,
      condition: node['Index Cond'] ?? node['Recheck Cond'] ?? node.Filter ?? null,
      estimated_rows: Math.round(node['Plan Rows']),
    });
  }
  for (const child of node.Plans ?? []) stepsOf(child, out);
  return out;
}

/**
 * The tables a plan reads whole, with their rows. A partition read whole is the month a time window
 * fell in (a window over most of a month is read faster whole than through an index): it counts
 * only when every partition holding rows is read, as its partitioned table read whole.
 */
async function readWhole(tx: Sql, scanned: readonly string[]): Promise<{ table: string; rows: number }[]> {
  if (scanned.length === 0) return [];
  const sizes = await tableSizes(tx, scanned);
  const siblings = await siblingPartitions(tx, scanned);
  const read = new Set(scanned);
  const partitions = new Set(siblings.map((s) => s.partition));
  const whole = scanned.filter((t) => !partitions.has(t)).map((table) => ({ table, rows: sizes.get(table) ?? 0 }));
  for (const parent of new Set(siblings.map((s) => s.parent))) {
    const holding = siblings.filter((s) => s.parent === parent && s.rows > 0);
    if (holding.every((s) => read.has(s.partition)))
      whole.push({ table: parent, rows: holding.reduce((sum, s) => sum + s.rows, 0) });
  }
  return whole;
}

const ratingOf = (cost: number): CostReport['rating'] =>
  cost < 1_000 ? 'light' : cost < 100_000 ? 'moderate' : 'heavy';

/**
 * What the planner expects of a query, without running it. Unless `explainOnly`, a plan that reads
 * a table of more than CINV_QUERY_SCAN_ROWS rows whole is refused with a 422 naming the table,
 * unless the caller asked for it (`allow_scan`) and may run heavy queries (`queries:read`).
 */
export async function guardCost(
  app: AppContext,
  tx: Sql,
  ctx: PredicateContext,
  query: Query,
  shape: { page: PageShape } | { aggregate: AggregateShape },
  explainOnly: boolean,
  allowScan = false,
): Promise<CostReport> {
  const statement =
    'page' in shape ? pageStatement(ctx, query, shape.page) : aggregateStatement(ctx, query, shape.aggregate);
  const [plan] = (await planOf(tx, statement)) as { Plan: PlanNode }[];
  const root = plan!.Plan;
  const steps = stepsOf(root);
  const scanned = [...new Set(steps.filter((s) => s.access === 'scan').map((s) => s.table))];
  const limit = app.config.queryScanRows;
  const scans = (await readWhole(tx, scanned)).filter((scan) => limit > 0 && scan.rows > limit);
  const report: CostReport = {
    rating: scans.length > 0 ? 'heavy' : ratingOf(root['Total Cost']),
    total_cost: Math.round(root['Total Cost']),
    estimated_rows: Math.round(root['Plan Rows']),
    steps,
    scans,
  };
  if (!explainOnly && scans.length > 0 && !(allowScan && can(ctx.principal, 'queries', 'read'))) {
    const table = scans[0]!;
    throw unprocessable(
      `The query would read all ${table.rows} rows of ${table.table} without an index: add a predicate an index serves ` +
        '(ci_type, name, namespace, status, a time window, raw_data equality), or set allow_scan with the queries:read permission',
      { reason: 'scan', scans, allow_scan: allowScan },
    );
  }
  return report;
}
