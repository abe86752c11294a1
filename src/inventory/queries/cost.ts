import type { Sql } from 'postgres';
import type { AppContext } from '../../context.js';
import { can } from '../../platform/auth/principal.js';
import { unprocessable } from '../../platform/errors.js';
import type { Query } from '../../platform/query-language/ast.js';
import type { PredicateContext } from './predicates.js';
import { aggregateStatement, pageStatement, planOf, type AggregateShape, type PageShape } from './store.js';
import { tableSizes } from './types-store.js';

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
  const sizes = scanned.length > 0 ? await tableSizes(tx, scanned) : new Map<string, number>();
  const limit = app.config.queryScanRows;
  const scans = scanned
    .map((table) => ({ table, rows: sizes.get(table) ?? 0 }))
    .filter((scan) => limit > 0 && scan.rows > limit);
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
