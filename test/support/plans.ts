import type { Sql } from '../../src/platform/db/database.js';

/** One node of a plan as EXPLAIN (FORMAT JSON) gives it. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

/** Every node of the statement's plan, the root first (`analyze`: the statement is run and its nodes say what they read). */
export async function planNodes(
  sql: Sql,
  statement: string,
  parameters: unknown[],
  options: { analyze?: boolean } = {},
): Promise<PlanNode[]> {
  const [row] = await sql.unsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
    `explain (${options.analyze ? 'analyze, ' : ''}format json) ${statement}`,
    parameters as never[],
  );
  const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
  return nodes(row!['QUERY PLAN'][0].Plan);
}
