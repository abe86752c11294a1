import type { Sql } from 'postgres';
import type { Queryable } from '../../platform/db/database.js';
import type { Expr } from '../../platform/query-language/ast.js';
import { parsedStandingMatch, standingCondition } from '../../inventory/queries/service.js';
import { useChangeShaper } from '../records/shaping.js';
import { matchCondition } from './match.js';
import { reshape, rulesOf, type CompiledRules, type RuleRow } from './store.js';

/** Parsed matches by rule id and version: a rule is parsed once, compiled for each transaction. */
const parsed = new Map<string, Expr>();

function exprOf(rule: RuleRow): Expr {
  const key = `${rule.id} ${new Date(rule.updated_at).toISOString()}`;
  let e = parsed.get(key);
  if (!e) {
    if (parsed.size > 10_000) parsed.clear();
    parsed.set(key, (e = parsedStandingMatch(rule.match)));
  }
  return e;
}

/** The tenant's rules as conditions over the change record `cr` and its CI `ci`. */
export function compileRules(
  sql: Sql,
  tenantId: string,
  rules: readonly RuleRow[],
  now: Date,
  base: 'cr' | 's' = 'cr',
): CompiledRules {
  const compiled: CompiledRules = { ignore: [], kinds: [], severities: [], rollups: [] };
  for (const rule of rules) {
    const when = matchCondition(sql, exprOf(rule), base, (leaf) => standingCondition(sql, tenantId, leaf, 'ci', now));
    if (rule.action === 'ignore') compiled.ignore.push(when);
    else if (rule.action === 'rollup') compiled.rollups.push(when);
    else {
      if (rule.kind) compiled.kinds.push({ when, kind: rule.kind });
      if (rule.severity) compiled.severities.push({ when, severity: rule.severity });
    }
  }
  return compiled;
}

/**
 * Applies the tenant's rules to records just written, in the writer's transaction: installed as
 * the process's shaper, so every writer (collections, the sweep, the API, the demo) goes through it.
 */
async function shapeNew(queryable: Queryable, tenantId: string, ids: readonly string[]): Promise<void> {
  const sql = queryable as unknown as Sql;
  const rules = await rulesOf(sql, tenantId);
  if (rules.length === 0) return;
  await reshape(sql, tenantId, compileRules(sql, tenantId, rules, new Date()), { ids });
}

/** Makes every change record this process writes go through the tenant's change rules. */
export function installChangeRules(): void {
  useChangeShaper(shapeNew);
}
