import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { coversSource } from '../../platform/auth/principal.js';
import type { Fragment } from '../../platform/auth/scope.js';
import type { Queryable } from '../../platform/db/database.js';
import { staleMinutes } from './check-store.js';
import type { QualitySettings } from './settings.js';

export interface SourceList {
  source_id: string;
  name: string;
  schedule_config: { enabled?: boolean; interval_minutes?: number };
  created_at: Date;
  listed_at: Date | null;
  finished_at: Date | null;
}

/**
 * The tenant's live sources the principal may see (a source any of its data scopes names), with
 * their last successful list. One row per source: a short read whatever the inventory's size.
 */
export async function sourceLists(sql: Sql, principal: Principal): Promise<SourceList[]> {
  const sources = await sql<SourceList[]>`
    select s.id::text as source_id, s.name, s.schedule_config, s.created_at, l.listed_at, l.finished_at
    from sources s left join quality_source_lists l on l.source_id = s.id
    where s.tenant_id = ${principal.tenantId} and s.deleted_at is null
    order by s.name, s.id`;
  return sources.filter((source) => coversSource(principal, source.source_id));
}

/** A source's list succeeded: it is the source's last successful list (freshness). */
export async function recordList(sql: Queryable, tenantId: string, sourceId: string, listedAt: Date, now: Date) {
  await sql`
    insert into quality_source_lists (source_id, tenant_id, listed_at, finished_at)
    values (${sourceId}, ${tenantId}, ${listedAt}, ${now})
    on conflict (source_id) do update set listed_at = excluded.listed_at, finished_at = excluded.finished_at`;
}

/**
 * Flags, for each source listed since the last sweep, its CIs that its last list did not see (last
 * seen before it started), and clears those it saw. One pass over each such source's checked CIs,
 * in the sweep rather than beside the list: a collection does not wait for it. Only CIs whose
 * verdict moves are written.
 */
export async function flagUnseen(sql: Sql): Promise<number> {
  const lists = await sql<{ source_id: string; tenant_id: string; listed_at: Date }[]>`
    select source_id::text, tenant_id, listed_at from quality_source_lists
    where flagged_for is distinct from listed_at order by source_id`;
  let moved = 0;
  for (const list of lists) {
    await sql.begin(async (tx) => {
      const result = await tx`
        update ci_quality q set unseen_since = case when l.last_seen < ${list.listed_at} then l.last_seen end
        from ci_last_seen l
        where q.tenant_id = ${list.tenant_id} and q.source_id = ${list.source_id} and l.ci_id = q.ci_id
          and (q.unseen_since is not null) <> (l.last_seen < ${list.listed_at})`;
      moved += result.count;
      await tx`update quality_source_lists set flagged_for = ${list.listed_at}
        where source_id = ${list.source_id} and listed_at = ${list.listed_at}`;
    });
  }
  return moved;
}

/**
 * Marks the tenant's CIs that went stale since the last sweep and clears those seen again. The
 * candidates come from one read of the narrow last-seen table, filtered by the smallest threshold
 * (as the lifecycle's own candidates are); the cleared ones from the index of stale rows.
 */
export async function markStale(sql: Sql, tenantId: string, settings: QualitySettings, now: Date) {
  const minutes = staleMinutes(sql, settings, 'q');
  const smallest = Math.min(
    settings.stale_after_minutes.default,
    ...Object.values(settings.stale_after_minutes.by_type),
  );
  const marked = await sql`
    update ci_quality q set stale_since = l.last_seen + make_interval(mins => ${minutes})
    from ci_last_seen l
    where l.tenant_id = ${tenantId} and l.last_seen < ${now}::timestamptz - make_interval(mins => ${smallest}::int)
      and q.ci_id = l.ci_id and q.stale_since is null
      and l.last_seen < ${now}::timestamptz - make_interval(mins => ${minutes})`;
  const cleared = await sql`
    update ci_quality q set stale_since = null
    from ci_last_seen l
    where q.tenant_id = ${tenantId} and q.stale_since is not null and l.ci_id = q.ci_id
      and l.last_seen >= ${now}::timestamptz - make_interval(mins => ${minutes})`;
  return { marked: marked.count, cleared: cleared.count };
}

/** The tenants that have checked CIs or settings: those a sweep keeps. */
export async function qualityTenants(sql: Queryable): Promise<string[]> {
  const rows = await sql<{ tenant_id: string }[]>`
    select id as tenant_id from tenants t
    where exists (select 1 from quality_counts c where c.tenant_id = t.id)
       or exists (select 1 from quality_count_deltas d where d.tenant_id = t.id)
       or exists (select 1 from quality_settings s where s.tenant_id = t.id)`;
  return rows.map((row) => row.tenant_id);
}

/**
 * Writes the day's row of the trend from the counters (folded just before): per source, instance
 * and type, with the CIs unfresh at this moment. The last sweep of a day leaves its state.
 */
export async function keepDay(sql: Queryable, tenantId: string, day: string, lateSources: readonly string[]) {
  await sql`delete from quality_daily where tenant_id = ${tenantId} and day = ${day}::date`;
  await sql`
    with counted as (
      select source_id, scope_id, ci_type, sum(cis) as cis, sum(incomplete) as incomplete,
             sum(completeness) as completeness, sum(orphans) as orphans, sum(duplicates) as duplicates,
             sum(stale) as stale, sum(case when source_id::text = any(${lateSources as string[]}::text[]) then cis else unseen end) as unfresh
      from quality_counts where tenant_id = ${tenantId} group by 1, 2, 3
    ), ruled as (
      select source_id, scope_id, ci_type, sum(applies) as applies, sum(passes) as passes
      from quality_rule_counts where tenant_id = ${tenantId} group by 1, 2, 3
    )
    insert into quality_daily (tenant_id, day, source_id, scope_id, ci_type, cis, incomplete, completeness, orphans,
                               duplicates, stale, unfresh, rule_applies, rule_passes)
    select ${tenantId}, ${day}::date, c.source_id, c.scope_id, c.ci_type, c.cis, c.incomplete, c.completeness, c.orphans,
           c.duplicates, c.stale, c.unfresh, coalesce(r.applies, 0), coalesce(r.passes, 0)
    from counted c left join ruled r
      on r.source_id = c.source_id and r.scope_id is not distinct from c.scope_id and r.ci_type = c.ci_type`;
}

/** Trend rows of days before `before` go. */
export async function trimDays(sql: Queryable, before: string): Promise<number> {
  const result = await sql`delete from quality_daily where day < ${before}::date`;
  return result.count;
}

export interface DayRow {
  day: string;
  cis: number;
  incomplete: number;
  completeness: number;
  orphans: number;
  duplicates: number;
  stale: number;
  unfresh: number;
  rule_applies: number;
  rule_passes: number;
}

/** The trend since `since`, summed per day over what the principal may see (type and source filters only). */
export async function trendOf(
  sql: Sql,
  visible: Fragment,
  filters: { ciType?: string; sourceId?: string },
  since: string,
): Promise<DayRow[]> {
  return sql<DayRow[]>`
    select to_char(day, 'YYYY-MM-DD') as day, sum(cis)::float8 as cis, sum(incomplete)::float8 as incomplete,
           sum(completeness)::float8 as completeness, sum(orphans)::float8 as orphans,
           sum(duplicates)::float8 as duplicates, sum(stale)::float8 as stale, sum(unfresh)::float8 as unfresh,
           sum(rule_applies)::float8 as rule_applies, sum(rule_passes)::float8 as rule_passes
    from quality_daily q
    where ${visible} and q.day >= ${since}::date
      and (${filters.ciType ?? null}::text is null or q.ci_type = ${filters.ciType ?? null})
      and (${filters.sourceId ?? null}::bigint is null or q.source_id = ${filters.sourceId ?? null}::bigint)
    group by q.day order by q.day`;
}
