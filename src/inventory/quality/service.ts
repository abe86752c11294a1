import type { Context } from 'koa';
import type { AppContext } from '../../context.js';
import { auditChange } from '../../platform/audit/log.js';
import { tenantReader, type Principal } from '../../platform/auth/principal.js';
import { mayShapeScores } from './access.js';
import { columnsOf, visibleTo } from '../../platform/auth/scope.js';
import { notFound } from '../../platform/errors.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import { bigintId } from '../../platform/http/schemas.js';
import { countedFromRows, qualityCounts, replaceCounters, ruleCounts, type CountFilters } from './counts-store.js';
import { recheck } from './check-store.js';
import { planOf } from './planning.js';
import { catchUpQuality, compilerFor } from './worker.js';
import { ciQuality, ciVisible, failingPage } from './items-store.js';
import { checkSettings } from './settings-check.js';
import { figuresOf, tallyBy, emptyTally, addCounts, addRuleCounts } from './scores.js';
import { effectiveSettings, MEASURES, type Measure, type QualitySettings } from './settings.js';
import { rulesOf, saveSettings, startWalk, storedSettings, queueLength, walkPage, walksOf } from './store.js';
import { sourceLists, trendOf } from './upkeep-store.js';
import { failingQuery } from './queries.js';
import { dueBy, lateSources } from './freshness.js';

export { QualityWorker, catchUpQuality } from './worker.js';

export { sweepQuality, sourceListed } from './upkeep.js';

const ROLLUP_LIMIT = 100;
const TREND_DAYS = 90;

export interface QualityFilters {
  ci_type?: string;
  source_id?: string;
  owner?: string;
}

/** The filters as the counters read them: a source id no row can have (0, beyond bigint) matches nothing. */
const countFilters = (f: QualityFilters): CountFilters => ({
  ciType: f.ci_type,
  sourceId: f.source_id === undefined ? undefined : (bigintId(f.source_id) ?? '0'),
  owner: f.owner,
});

export async function settingsOf(app: AppContext, tenantId: string): Promise<QualitySettings> {
  return effectiveSettings(await storedSettings(app.sql, tenantId));
}

const worstFirst = <T extends { score: number | null; cis: number }>(rows: T[]) =>
  rows.sort((a, b) => (a.score ?? 101) - (b.score ?? 101) || b.cis - a.cis).slice(0, ROLLUP_LIMIT);

/** The counters the principal may see under the filters, its sources, and the whole of them tallied. */
async function tallied(app: AppContext, principal: Principal, filters: QualityFilters) {
  const settings = await settingsOf(app, principal.tenantId);
  const [counts, rules, sources] = await Promise.all([
    qualityCounts(app.sql, principal, countFilters(filters)),
    ruleCounts(app.sql, principal, countFilters(filters)),
    sourceLists(app.sql, principal),
  ]);
  const late = lateSources(sources, settings, app.now());
  const total = emptyTally();
  for (const row of counts) addCounts(total, row, late.has(row.source_id));
  for (const row of rules) addRuleCounts(total, row);
  return { settings, counts, rules, sources, late, total };
}

/**
 * The scores the principal may see: overall and per measure, rolled up by type, source,
 * instance and owner (worst first), the sources' freshness and the daily trend. Read from the counters: a few
 * rows per group, whatever the inventory's size.
 */
export async function qualityOverview(app: AppContext, principal: Principal, filters: QualityFilters) {
  const now = app.now();
  const { settings, counts, rules, sources, late, total } = await tallied(app, principal, filters);
  const isLate = (id: string) => late.has(id);
  const rollup = (key: 'ci_type' | 'source_id' | 'owner') =>
    worstFirst(
      [...tallyBy(counts, rules, (row) => row[key] ?? '', isLate)].map(([value, tally]) => ({
        [key]: value === '' && key === 'owner' ? null : value,
        ...figuresOf(tally, settings),
      })),
    );
  const names = new Map(sources.map((s) => [s.source_id, s.name]));
  const ruleNames = new Map((await rulesOf(app.sql, principal.tenantId)).map((rule) => [rule.id, rule.name]));
  const byRule = [...tallyBy([], rules, (row) => (row as { rule_id: string }).rule_id, isLate)].map(([id, tally]) => ({
    rule_id: id,
    name: ruleNames.get(id) ?? id,
    applies: tally.judged.rules,
    failing: tally.failing.rules,
    pass_rate:
      tally.judged.rules > 0
        ? Math.round((1000 * (tally.judged.rules - tally.failing.rules)) / tally.judged.rules) / 10
        : null,
  }));
  return {
    ...figuresOf(total, settings),
    by_type: rollup('ci_type'),
    by_source: rollup('source_id').map((row) => ({
      ...row,
      name: names.get((row as { source_id?: string }).source_id ?? '') ?? null,
    })),
    by_instance: worstFirst(
      [...tallyBy(counts, rules, (row) => JSON.stringify([row.source_id, row.scope_id]), isLate)].map(
        ([key, tally]) => {
          const [sourceId, scopeId] = JSON.parse(key) as [string, string | null];
          return {
            source_id: sourceId,
            scope_id: scopeId,
            name: names.get(sourceId) ?? null,
            ...figuresOf(tally, settings),
          };
        },
      ),
    ),
    by_owner: rollup('owner'),
    rules: byRule,
    sources: sources.map((source) => {
      const due = dueBy(source, settings);
      return {
        source_id: source.source_id,
        name: source.name,
        scheduled: due !== null,
        last_list_at: source.listed_at ? new Date(source.listed_at).toISOString() : null,
        due_by: due?.toISOString() ?? null,
        late: late.has(source.source_id),
      };
    }),
    trend: await trend(app, principal, filters, settings),
    pending: (await queueLength(app.sql, principal.tenantId)) + (await walksOf(app.sql, principal.tenantId)),
    computed_at: now.toISOString(),
  };
}

async function trend(app: AppContext, principal: Principal, filters: QualityFilters, settings: QualitySettings) {
  const since = new Date(app.now().getTime() - TREND_DAYS * 86_400_000).toISOString().slice(0, 10);
  const days = await trendOf(
    app.sql,
    visibleTo(app.sql, principal, columnsOf('q')),
    { ciType: filters.ci_type, sourceId: countFilters(filters).sourceId },
    since,
  );
  return days.map((day) => {
    const tally = emptyTally();
    addCounts(tally, { ...day, source_id: '', scope_id: null, ci_type: '', owner: null, unseen: day.unfresh }, false);
    addRuleCounts(tally, {
      rule_id: '',
      source_id: '',
      scope_id: null,
      ci_type: '',
      owner: null,
      applies: day.rule_applies,
      passes: day.rule_passes,
    });
    const figures = figuresOf(tally, settings);
    return {
      day: day.day,
      score: figures.score,
      measures: Object.fromEntries(MEASURES.map((m) => [m, figures.measures[m].score])) as Record<
        Measure,
        number | null
      >,
    };
  });
}

export interface ItemsQuery extends QualityFilters {
  rule_id?: string;
  cursor?: string;
  limit: number;
}

/** A page of the CIs failing a measure, with why, and the query-language query that finds them where one can. */
export async function failingItems(app: AppContext, principal: Principal, measure: Measure, query: ItemsQuery) {
  const settings = await settingsOf(app, principal.tenantId);
  const binding: CursorBinding = {
    tenantId: principal.tenantId,
    reader: principal,
    scope: `quality:${measure}`,
    sort: null,
    filters: {
      ci_type: query.ci_type ?? null,
      source_id: query.source_id ?? null,
      owner: query.owner ?? null,
      rule_id: query.rule_id ?? null,
    },
  };
  const after = query.cursor
    ? (decodeCursor(app.config.secret, query.cursor, binding).key as [string, string | null])
    : undefined;
  // only freshness depends on the sources' schedules
  const sources = measure === 'freshness' ? await sourceLists(app.sql, principal) : [];
  const late = lateSources(sources, settings, app.now());
  const rows = await failingPage(app.sql, principal, measure, {
    filters: countFilters(query),
    lateSources: [...late],
    ruleId: query.rule_id,
    after: after ? { ciId: after[0], ruleId: after[1] } : undefined,
    limit: query.limit,
  });
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const rules = measure === 'rules' ? await rulesOf(app.sql, principal.tenantId) : [];
  return {
    items: page.map((row) => ({
      ci_id: row.ci_id,
      name: row.name,
      ci_type: row.ci_type,
      namespace: row.namespace,
      source_id: row.source_id,
      scope_id: row.scope_id,
      owner: row.owner,
      reason: row.reason,
      since: row.since ? new Date(row.since).toISOString() : null,
      ...(measure === 'rules' ? { rule_id: row.rule_id } : {}),
    })),
    next_cursor:
      rows.length > query.limit && last ? encodeCursor(app.config.secret, binding, [last.ci_id, last.rule_id]) : null,
    query: failingQuery(
      measure,
      settings,
      { ...query, source_id: countFilters(query).sourceId },
      { sources, late, rules, now: app.now() },
    ),
  };
}

/** What is missing or wrong about one CI (the CI page's quality panel); 404 when the principal cannot see it. */
const UNCHECKED = {
  checked: false,
  owner: null,
  completeness: null,
  missing: [] as string[],
  missing_recommended: [] as string[],
  orphan: null,
  duplicate: null,
  stale_since: null,
  unfresh: null,
  unseen_since: null,
  rules: [] as { rule_id: string; name: string; passed: boolean }[],
  checked_at: null,
};

export async function qualityOfCi(app: AppContext, principal: Principal, ciId: string) {
  const found = await ciQuality(app.sql, principal, ciId);
  if (!found) {
    // a CI the caller may see that is not active, or not checked yet, has no verdicts: said so, not a 404
    if (!(await ciVisible(app.sql, principal, ciId)))
      throw notFound('Configuration item not found, or it lies outside the data you may see', { ci_id: ciId });
    return { ...UNCHECKED, ci_id: ciId };
  }
  const { row, rules } = found;
  const sources = await sourceLists(app.sql, principal);
  const settings = await settingsOf(app, principal.tenantId);
  const late = lateSources(sources, settings, app.now()).has(row.source_id);
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    ci_id: row.ci_id,
    checked: true,
    owner: row.owner,
    completeness: Math.round(row.completeness * 1000) / 10,
    missing: row.missing,
    missing_recommended: row.missing_recommended,
    orphan: row.orphan,
    duplicate: row.duplicate,
    stale_since: iso(row.stale_since),
    unfresh: late ? 'its source is past its schedule' : row.unseen_since ? `not seen by its source's last list` : null,
    unseen_since: iso(row.unseen_since),
    rules: rules.map((rule) => ({ rule_id: rule.rule_id, name: rule.name, passed: rule.passed })),
    checked_at: iso(row.checked_at),
  };
}

export async function qualitySettings(app: AppContext, principal: Principal) {
  const stored = await storedSettings(app.sql, principal.tenantId);
  return { settings: effectiveSettings(stored), customised: stored !== undefined };
}

/**
 * Replaces the tenant's settings (each top-level key given replaces the shipped default's; the
 * others keep it) and has the worker check every CI again under them. Only a principal that sees
 * all the tenant's data may: the settings shape everyone's scores. Audited.
 */
export async function replaceSettings(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  body: Partial<QualitySettings>,
) {
  mayShapeScores(principal, 'settings');
  const settings = effectiveSettings(body);
  await checkSettings(app, settings);
  const now = app.now();
  await app.sql.begin(async (tx) => {
    await saveSettings(tx, principal.tenantId, { ...body } as QualitySettings, now);
    await startWalk(tx, principal.tenantId, null, now);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'quality.settings_changed',
      {
        type: 'quality_settings',
        id: principal.tenantId,
      },
      { keys: Object.keys(body).sort() },
    );
  });
  return qualitySettings(app, principal);
}

export interface Recount {
  checked: number;
  /** Counter groups whose counts differed from those counted from the rows. */
  differences: { group: string; counters: Record<string, number>; rows: Record<string, number> }[];
}

const groupKey = (row: {
  source_id: string;
  scope_id: string | null;
  ci_type: string;
  owner: string | null;
  rule_id?: string;
}) => [row.rule_id ?? '', row.source_id, row.scope_id ?? '', row.ci_type, row.owner ?? ''].join('\u0000');

/**
 * `cinv quality recount`: checks every CI of the tenant again (as the worker would), counts the
 * counters afresh from the rows and compares them with those the writes kept; with `fix`, the
 * counters are replaced by the recount.
 */
export async function recountQuality(app: AppContext, tenantId: string, fix: boolean): Promise<Recount> {
  const plan = await planOf(app, tenantId);
  let checked = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const ids = await walkPage(app.sql, tenantId, after, 500);
    if (ids.length === 0) break;
    await app.sql.begin(async (transaction) => {
      const tx = transaction as unknown as AppContext['sql'];
      const now = app.now();
      await recheck(tx, plan, ids, now, compilerFor(tx, plan, now));
    });
    checked += ids.length;
    after = ids[ids.length - 1]!;
  }
  await catchUpQuality(app);
  const reader = tenantReader(tenantId);
  const kept = [...(await qualityCounts(app.sql, reader, {})), ...(await ruleCounts(app.sql, reader, {}))];
  const counted = await countedFromRows(app.sql, tenantId);
  const fresh = [...counted.cis, ...counted.rules];
  const byKey = (rows: typeof kept) =>
    new Map(rows.map((row) => [groupKey(row), row as unknown as Record<string, number>]));
  const keptBy = byKey(kept);
  const freshBy = byKey(fresh as typeof kept);
  const differences: Recount['differences'] = [];
  const figures = ['cis', 'incomplete', 'orphans', 'duplicates', 'stale', 'unseen', 'applies', 'passes'];
  for (const key of new Set([...keptBy.keys(), ...freshBy.keys()])) {
    const a = keptBy.get(key) ?? {};
    const b = freshBy.get(key) ?? {};
    const differs =
      figures.some((f) => Number(a[f] ?? 0) !== Number(b[f] ?? 0)) ||
      Math.abs(Number(a.completeness ?? 0) - Number(b.completeness ?? 0)) > 1e-6;
    if (differs) differences.push({ group: key.split('\u0000').join('/'), counters: a, rows: b });
  }
  if (fix && differences.length > 0) await replaceCounters(app.sql, tenantId);
  return { checked, differences };
}

/**
 * The principal's overall and per-measure scores now (what a quality alert compares with the
 * threshold): the counters it may see, and its sources' schedules.
 */
export async function scoresOf(app: AppContext, principal: Principal) {
  const { settings, total } = await tallied(app, principal, {});
  return { figures: figuresOf(total, settings), threshold: settings.alert_below };
}
