import type { Sql } from 'postgres';
import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import type { Queryable } from '../../platform/db/database.js';
import { cisAt, visibleNow } from '../../history/records/as-of.js';
import { conditions, narrowing, VERSIONED, type CiListCriteria } from '../configuration-items/criteria.js';
import { CI_STATUSES } from '../configuration-items/schema.js';

/*
 * What differs in the inventory between two moments (GET /inventory/diff): the CIs written in
 * between, compared by the digests their ways back keep, page by page, and counted by type.
 */

/** How the inventory differs between two moments, for one CI. */
export interface CiDifference {
  ci_id: string;
  kind: 'appeared' | 'disappeared' | 'changed';
  ci_type: string;
  name: string;
  namespace: string | null;
  /** The paths whose values differ (dotted: top-level fields, keys into raw_data and type_data). */
  changed_fields: string[];
}

export interface DiffCriteria extends Pick<CiListCriteria, 'statuses' | 'filters' | 'text' | 'sourceId'> {
  from: string;
  to: string;
  limit: number;
  /** Continue after this CI id. */
  after?: string;
  /** A page answers short once it has examined this many candidates (CINV_DIFF_PAGE_EXAMINE). */
  examine: number;
}

/** One page of differences; `resumeAfter` when it stopped short, examining no more candidates, where the next goes on. */
export interface DiffPage {
  rows: CiDifference[];
  resumeAfter?: string;
}

/** What a diff compares: a row as it was, without what every write moves (updated_at) and what is not the CI's (the digest). */
const comparable = (sql: Sql, alias: string) =>
  sql`case when ${sql(alias)}.ci_id is null then null else to_jsonb(${sql(alias)}) - 'updated_at' - 'content_hash' - 'tenant_id' end`;

/** The writes of the way back (alias u) between the two moments: a range of its (tenant, time) index. */
const writtenBetween = (sql: Queryable, principal: Principal, criteria: DiffCriteria) =>
  sql`u.tenant_id = ${principal.tenantId} and u.at > ${criteria.from}::text::timestamptz and u.at <= ${criteria.to}::text::timestamptz`;

/**
 * The CIs created or removed between two moments. Every status is named so that the created_at
 * index, which leads with the status, is read as three ranges rather than whole.
 */
function bornOrGone(sql: Sql, principal: Principal, criteria: DiffCriteria): Fragment {
  const tenant = principal.tenantId;
  const from = sql`${criteria.from}::text::timestamptz`;
  const to = sql`${criteria.to}::text::timestamptz`;
  return sql`
    select c.ci_id from configuration_items c
    where c.tenant_id = ${tenant} and c.status = any(${CI_STATUSES as unknown as string[]}::text[]) and c.created_at > ${from} and c.created_at <= ${to}
    union all
    select g.ci_id from ci_tombstones g
    where g.tenant_id = ${tenant} and ((g.removed_at > ${from} and g.removed_at <= ${to}) or (g.created_at > ${from} and g.created_at <= ${to}))`;
}

/**
 * The CIs that may differ between two moments: only a CI written, created or removed in between can
 * differ, so they come from the ways back and the tombstones of the interval, and the cost follows
 * the interval's changes, not the inventory.
 */
function candidates(sql: Sql, principal: Principal, criteria: DiffCriteria): Fragment {
  return sql`(
    select u.ci_id from ci_undo u
    where ${writtenBetween(sql, principal, criteria)}
    union
    select ci_id from (${bornOrGone(sql, principal, criteria)}) born
  )`;
}

/**
 * The next candidates after `after` in CI id order, at most about `size`: the written ones walked
 * along the way back's (tenant, CI, time) index from the cursor, so that a page reads the index
 * entries of the CIs it passes rather than the whole interval; the created and removed ones beside
 * them. `exhausted` when nothing follows the last.
 */
async function nextCandidates(
  sql: Sql,
  principal: Principal,
  criteria: DiffCriteria,
  after: string | undefined,
  size: number,
): Promise<{ ids: string[]; exhausted: boolean }> {
  const past = after ? sql`and ci_id > ${after}::uuid` : sql``;
  // walked in CI order along the (tenant, CI, time) index: the planner, which expects few writes in
  // the interval, would rather gather all of them by time and sort (the whole interval, for a page)
  const written = await sql.begin(async (tx) => {
    await tx`set local enable_sort = off`;
    return tx<{ ci_id: string }[]>`
      select distinct u.ci_id from ci_undo u
      where ${writtenBetween(tx, principal, criteria)}
        ${after ? tx`and u.ci_id > ${after}::uuid` : tx``}
      order by u.ci_id limit ${size}`;
  });
  const bornOrRemoved = await sql<{ ci_id: string }[]>`
    select distinct ci_id from (${bornOrGone(sql, principal, criteria)}) b where true ${past} order by ci_id limit ${size}`;
  // a full batch of either ends the window at its last id: the other may hold ids beyond it that the next window takes
  const edges = [written, bornOrRemoved]
    .filter((rows) => rows.length === size)
    .map((rows) => rows[rows.length - 1]!.ci_id);
  const edge = edges.length === 0 ? undefined : edges.reduce((a, b) => (a < b ? a : b));
  const ids = [...new Set([...written, ...bornOrRemoved].map((row) => row.ci_id))]
    .filter((id) => edge === undefined || id <= edge)
    .sort();
  return { ids, exhausted: edge === undefined };
}

/**
 * The CIs of `source` (a relation of ci_id), each as it was at both moments that matches the
 * criteria then (`b` before, `a` after; null when it did not exist or did not match).
 */
function compared(sql: Sql, principal: Principal, criteria: DiffCriteria, source: Fragment): Fragment {
  const at = (moment: string) =>
    cisAt(sql, moment, 'ci', {
      visible: (row) => visibleTo(sql, principal, columnsOf(row)),
      where: (_row, rebuilt) => narrowing(sql, criteria, rebuilt),
      key: (row) => sql`${sql(row)}.ci_id = m.ci_id`,
    });
  return sql`
    select m.ci_id, ${comparable(sql, 'b')} as before, ${comparable(sql, 'a')} as after
    from ${source} m
    left join lateral (select ci.* from ${at(criteria.from)} ci) b on true
    left join lateral (select ci.* from ${at(criteria.to)} ci) a on true
    where b.ci_id is not null or a.ci_id is not null`;
}

/** The differences as rows: what kind, and the changed paths (as cinv_jsonb_undo finds them, see src/history/records/diff.ts for the same rule). */
function differences(sql: Sql, rows: Fragment): Fragment {
  return sql`
    select d.ci_id,
           case when d.before is null then 'appeared' when d.after is null then 'disappeared' else 'changed' end as kind,
           coalesce(d.after, d.before) ->> 'ci_type' as ci_type,
           coalesce(d.after, d.before) ->> 'name' as name,
           coalesce(d.after, d.before) ->> 'namespace' as namespace,
           case when d.before is null or d.after is null then '{}'::text[]
                else array(select array_to_string(array(select jsonb_array_elements_text(op -> 'p')), '.')
                           from cinv_jsonb_undo(d.before, d.after, '{}') op order by 1) end as changed_fields
    from (${rows}) d
    where d.before is null or d.after is null or d.before <> d.after`;
}

/**
 * One page of the differences, in CI id order, with one more row to tell whether more follow. The
 * candidates come in windows from the cursor on (see nextCandidates), each compared at both
 * moments, until the page is full: a window whose candidates all changed and back, or fell outside
 * the criteria, is followed by a larger one. A page that has examined `criteria.examine`
 * candidates answers with what it found and where to go on, so that its cost stays bounded when
 * few of the interval's writes make a difference.
 */
export async function diffPage(sql: Sql, principal: Principal, criteria: DiffCriteria): Promise<DiffPage> {
  const wanted = criteria.limit + 1;
  const found: CiDifference[] = [];
  let after = criteria.after;
  let size = Math.min(2 * wanted, criteria.examine);
  let examined = 0;
  for (;;) {
    const window = await nextCandidates(sql, principal, criteria, after, size);
    if (window.ids.length > 0) {
      const source = sql`(select unnest(${window.ids}::uuid[]) as ci_id)`;
      found.push(
        ...(await sql<CiDifference[]>`
          select * from (${differences(sql, compared(sql, principal, criteria, source))}) x
          order by x.ci_id limit ${wanted - found.length}`),
      );
    }
    if (found.length >= wanted || window.exhausted) return { rows: found };
    after = window.ids[window.ids.length - 1];
    examined += window.ids.length;
    if (examined >= criteria.examine) return { rows: found, resumeAfter: after };
    size = Math.min(size * 4, 20_000, criteria.examine - examined);
  }
}

export interface DiffCount {
  ci_type: string;
  appeared: number;
  disappeared: number;
  changed: number;
}

/** Filters the quiet CIs of a diff can answer (beside the source): their type and status were the same at both moments. */
const QUIET_FIELDS = new Set(['ci_type', 'status']);

/**
 * Every CI written between the two moments, once, with what its writes in between tell: whether
 * all of them were quiet (started no version, sql/0023, and know their digests), the digest of its
 * state at `from` (the first write's before_digest) and at `to` (the last write's after_digest),
 * and its source, type and status as the last write left them. One range of the (tenant, time)
 * index, which covers these columns, so the heap of the way back is not read. The writes are put
 * in (CI, time) order once and each CI's last one kept, with the first's digest beside it: ordered
 * aggregates would sort every CI's writes again for each of the four, most of the counts' time.
 */
function writesBetween(sql: Sql, principal: Principal, criteria: DiffCriteria): Fragment {
  return sql`
    select ci_id, before_digest, after_digest, ci_type, status, source_id, quiet from (
      select u.ci_id,
             first_value(u.before_digest) over w as before_digest,
             u.after_digest, u.ci_type, u.status,
             min(u.source_id) over w as source_id,
             bool_and(u.versioned is not null and not u.versioned and u.before_digest is not null) over w as quiet,
             row_number() over w as n,
             count(*) over w as writes
      from ci_undo u
      where ${writtenBetween(sql, principal, criteria)}
      window w as (partition by u.ci_id order by u.at, u.id rows between unbounded preceding and unbounded following)
    ) u
    where n = writes`;
}

/**
 * The differences counted by CI type (the type at the later moment, else the earlier). Where the
 * criteria are on versioned columns, a candidate's presence and type at each moment come from its
 * versions and whether it changed from the digests of its two states (cinv_digest_at), so that
 * nothing is taken back; otherwise each candidate is taken back to both moments and compared.
 *
 * For a principal without data scopes and criteria on source, type and status alone, a CI whose
 * writes in between were all quiet and that was neither created nor removed in between existed at
 * both moments with one source, type and status, and differs when its two digests do: most CIs of a
 * busy day are such, and they are counted from writesBetween with no lookup per CI. Only the rest
 * is looked up.
 */
export function diffCounts(sql: Sql, principal: Principal, criteria: DiffCriteria): Promise<DiffCount[]> {
  const versioned =
    criteria.text === undefined && criteria.filters.every((f) => f.target === 'column' && VERSIONED.has(f.field));
  if (versioned) {
    const quiet = seesAllData(principal) && criteria.filters.every((f) => QUIET_FIELDS.has(f.field));
    const version = (moment: string) => sql`
      select ci.ci_type from ci_versions ci
      where ci.ci_id = m.ci_id and ci.valid_from <= ${moment}::text::timestamptz and ci.valid_to > ${moment}::text::timestamptz
        and ${conditions(sql, principal, criteria)} and ${visibleNow(sql, principal, sql`m.ci_id`)}`;
    // the first write after a moment holds the digest of the CI then; without one, the CI is as it is now
    const firstWrite = (moment: string) => sql`
      select u.id, u.before_digest from ci_undo u
      where u.tenant_id = ${principal.tenantId} and u.ci_id = m.ci_id and u.at > ${moment}::text::timestamptz order by u.at, u.id limit 1`;
    const digestAt = (write: string, moment: string) => sql`
      case when ${sql(write)}.id is null then coalesce(cinv_state_digest(to_jsonb(c)), cinv_state_digest(to_jsonb(g)))
           else coalesce(${sql(write)}.before_digest, cinv_digest_at(${principal.tenantId}, m.ci_id, ${moment}::text::timestamptz)) end`;
    const lookedUp = quiet
      ? sql`(select ci_id from w where not w.quiet union select ci_id from bg)`
      : candidates(sql, principal, criteria);
    return sql<DiffCount[]>`
      ${quiet ? sql`with w as materialized (${writesBetween(sql, principal, criteria)}), bg as materialized (${bornOrGone(sql, principal, criteria)})` : sql``}
      select ci_type,
             count(*) filter (where kind = 'appeared')::int as appeared,
             count(*) filter (where kind = 'disappeared')::int as disappeared,
             count(*) filter (where kind = 'changed')::int as changed
      from (
        select coalesce(a.ci_type, b.ci_type) as ci_type,
               case when b.ci_type is null then 'appeared' when a.ci_type is null then 'disappeared'
                    when ${digestAt('w1', criteria.from)} is distinct from ${digestAt('w2', criteria.to)} then 'changed' end as kind
        from ${lookedUp} m
        left join lateral (${version(criteria.from)}) b on true
        left join lateral (${version(criteria.to)}) a on true
        left join lateral (${firstWrite(criteria.from)}) w1 on true
        left join lateral (${firstWrite(criteria.to)}) w2 on true
        left join configuration_items c on c.ci_id = m.ci_id
        left join ci_tombstones g on g.ci_id = m.ci_id
        where b.ci_type is not null or a.ci_type is not null
        ${
          quiet
            ? sql`union all
                  select ci.ci_type, 'changed' from w ci
                  where ci.quiet and ci.before_digest <> ci.after_digest and ${narrowing(sql, criteria)}
                    and ci.ci_id not in (select bg.ci_id from bg)`
            : sql``
        }
      ) d
      where kind is not null
      group by 1 order by 1`;
  }
  return sql<DiffCount[]>`
    select coalesce(d.after, d.before) ->> 'ci_type' as ci_type,
           count(*) filter (where d.before is null)::int as appeared,
           count(*) filter (where d.after is null)::int as disappeared,
           count(*) filter (where d.before is not null and d.after is not null)::int as changed
    from (${compared(sql, principal, criteria, candidates(sql, principal, criteria))}) d
    where d.before is null or d.after is null or d.before <> d.after
    group by 1 order by 1`;
}
