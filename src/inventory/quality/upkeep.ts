import type { AppContext } from '../../context.js';
import { tenantReader } from '../../platform/auth/principal.js';
import { qualityBelowThreshold, qualityFailing, qualityScore } from '../../platform/observability/metrics.js';
import { foldQualityCounts, qualityCounts, ruleCounts } from './counts-store.js';
import { figuresOf, tallyBy } from './scores.js';
import { effectiveSettings, MEASURES, type QualitySettings } from './settings.js';
import { storedSettings } from './store.js';
import { flagUnseen, keepDay, markStale, qualityTenants, recordList, sourceLists, trimDays } from './upkeep-store.js';
import { lateSources } from './freshness.js';

const TREND_KEPT_DAYS = 400;

/**
 * A collector run's list of a source succeeded: freshness follows (recordList, then the sweep's
 * flagUnseen). A failure is logged and does not fail the run: the next list puts it right.
 */
export async function sourceListed(app: AppContext, tenantId: string, sourceId: string, listedAt: Date) {
  try {
    await recordList(app.sql, tenantId, sourceId, listedAt, app.now());
  } catch (error) {
    app.logger.warn({ err: error, source: sourceId }, 'recording the list for data quality failed');
  }
}

/**
 * The sweep's share of data quality: the CIs the last lists did not see flagged, staleness marked
 * and cleared, the counters folded, the day's row of the trend written, and the scores on
 * /metrics. Reads counters and the narrow last-seen table, never the CIs themselves.
 */
export async function sweepQuality(app: AppContext, now: Date) {
  const unseenMoved = await flagUnseen(app.sql);
  const tenants = await qualityTenants(app.sql);
  let stale = 0;
  const day = now.toISOString().slice(0, 10);
  const metrics: { tenantId: string; settings: QualitySettings; late: Set<string> }[] = [];
  for (const tenantId of tenants) {
    const settings = effectiveSettings(await storedSettings(app.sql, tenantId));
    const marked = await markStale(app.sql, tenantId, settings, now);
    stale += marked.marked + marked.cleared;
    metrics.push({
      tenantId,
      settings,
      late: lateSources(await sourceLists(app.sql, tenantReader(tenantId)), settings, now),
    });
  }
  const folded = await foldQualityCounts(app.sql);
  qualityScore.reset();
  qualityFailing.reset();
  qualityBelowThreshold.reset();
  for (const { tenantId, settings, late } of metrics) {
    await keepDay(app.sql, tenantId, day, [...late]);
    await publish(app, tenantId, settings, late);
  }
  const trimmed = await trimDays(
    app.sql,
    new Date(now.getTime() - TREND_KEPT_DAYS * 86_400_000).toISOString().slice(0, 10),
  );
  return { unseenMoved, staleMoved: stale, qualityDeltasFolded: folded, trendDaysTrimmed: trimmed };
}

/** The tenant's scores per measure, type and source (and overall) into the gauges. */
async function publish(app: AppContext, tenantId: string, settings: QualitySettings, late: ReadonlySet<string>) {
  const reader = tenantReader(tenantId);
  const counts = await qualityCounts(app.sql, reader, {});
  const rules = await ruleCounts(app.sql, reader, {});
  const groups = tallyBy(
    counts,
    rules,
    (row) => `${row.ci_type}\u0000${row.source_id}`,
    (id) => late.has(id),
  );
  for (const [key, tally] of groups) {
    const [ciType, source] = key.split('\u0000') as [string, string];
    const figures = figuresOf(tally, settings);
    const set = (measure: string, score: number) => {
      qualityScore.set({ measure, ci_type: ciType, source }, score);
      qualityBelowThreshold.set({ measure, ci_type: ciType, source }, score < settings.alert_below ? 1 : 0);
    };
    if (figures.score !== null) set('overall', figures.score);
    for (const measure of MEASURES) {
      const figure = figures.measures[measure];
      if (figure.score === null) continue;
      set(measure, figure.score);
      qualityFailing.set({ measure, ci_type: ciType, source }, figure.failing);
    }
  }
}
