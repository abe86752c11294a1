import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';

/**
 * The CI types the principal may see, of any status, from the CI counts by type and the deltas not
 * folded in yet: a few rows per instance and type, whatever the inventory's size.
 */
export async function ciTypesVisible(sql: Sql, principal: Principal): Promise<string[]> {
  const visible = visibleTo(sql, principal, columnsOf('ci'));
  const rows = await sql<{ ci_type: string }[]>`
    select ci_type from (
      select ci.ci_type, ci.cis as n from ci_type_counts ci where ${visible}
      union all
      select ci.ci_type, ci.delta from ci_count_deltas ci where ${visible}
    ) counted
    group by ci_type having sum(n) > 0
    order by ci_type`;
  return rows.map((r) => r.ci_type);
}

export interface Sample {
  ciType: string | undefined;
  /** How many of the most recently created active CIs to read. */
  size: number;
}

/** The sample as a FROM item: the newest active CIs (of the type) the principal may see, read along an index. */
function sampled(sql: Sql, principal: Principal, sample: Sample): Fragment {
  const typed = sample.ciType === undefined ? sql`` : sql`and ci.ci_type = ${sample.ciType}`;
  return sql`(
    select ci.ci_id, ci.raw_data, ci.type_data from configuration_items ci
    where ${visibleTo(sql, principal, columnsOf('ci'))} and ci.status = 'active' ${typed}
    order by ci.created_at desc limit ${sample.size}
  )`;
}

/** The relationship types of the sample's relationships, either end. */
export async function relationshipTypesOfSample(sql: Sql, principal: Principal, sample: Sample): Promise<string[]> {
  const rows = await sql<{ relationship_type: string }[]>`
    with s as ${sampled(sql, principal, sample)}
    select distinct relationship_type from (
      select r.relationship_type from relationships r join s on r.from_ci_id = s.ci_id where r.tenant_id = ${principal.tenantId}
      union all
      select r.relationship_type from relationships r join s on r.to_ci_id = s.ci_id where r.tenant_id = ${principal.tenantId}
    ) typed
    order by relationship_type`;
  return rows.map((r) => r.relationship_type);
}

export interface PathWalk {
  /** `raw_data` or `type_data`, and the segments below it the walk starts from. */
  root: 'raw_data' | 'type_data';
  under: readonly string[];
  /** How many levels below `under` to list. */
  depth: number;
}

/**
 * The JSON paths present in the sample below each walk's start, as segments from the document's
 * root; an array is entered through its first element (segment `0`), as the query addresses one.
 */
export async function pathsOfSample(
  sql: Sql,
  principal: Principal,
  sample: Sample,
  walks: readonly PathWalk[],
  limit: number,
): Promise<string[][]> {
  if (walks.length === 0) return [];
  const starts = walks.map(
    (walk) =>
      sql`select ${[walk.root, ...walk.under]}::text[] as path, s.${sql(walk.root)} #> ${walk.under as string[]}::text[] as value, ${walk.depth}::int as room, true as start from s`,
  );
  const rows = await sql<{ path: string[] }[]>`
    with recursive s as ${sampled(sql, principal, sample)},
    walk (path, value, room, start) as (
      ${starts.reduce((all, start) => sql`${all} union all ${start}`)}
      union all
      select w.path || e.key, e.value, w.room - 1, false
      from walk w cross join lateral jsonb_each(
        case
          when jsonb_typeof(w.value) = 'object' then w.value
          when jsonb_typeof(w.value) = 'array' and jsonb_array_length(w.value) > 0 then jsonb_build_object('0', w.value -> 0)
          else '{}'::jsonb
        end
      ) e
      where w.room > 0
    )
    select path from walk where not start group by path order by cardinality(path), path limit ${limit}`;
  return rows.map((r) => r.path);
}
