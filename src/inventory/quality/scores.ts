import type { CountRow, RuleCountRow } from './counts-store.js';
import { MEASURES, type Measure, type QualitySettings } from './settings.js';

/** One measure of a group: how many it judged, how many fail, and its score (0-100, null when it judged none). */
export interface MeasureFigure {
  items: number;
  failing: number;
  score: number | null;
}

export interface GroupFigures {
  cis: number;
  score: number | null;
  measures: Record<Measure, MeasureFigure>;
}

/** The counters a group adds up: per measure, what it judged, what fails, and for completeness the sum of scores. */
export interface Tally {
  cis: number;
  judged: Record<Measure, number>;
  failing: Record<Measure, number>;
  completeness: number;
}

export const emptyTally = (): Tally => ({
  cis: 0,
  judged: Object.fromEntries(MEASURES.map((m) => [m, 0])) as Record<Measure, number>,
  failing: Object.fromEntries(MEASURES.map((m) => [m, 0])) as Record<Measure, number>,
  completeness: 0,
});

/** Adds a counter row; `late` says whether its source missed its schedule (then all its CIs are unfresh). */
export function addCounts(tally: Tally, row: CountRow, late: boolean): void {
  tally.cis += row.cis;
  for (const m of ['freshness', 'staleness', 'orphans', 'duplicates', 'completeness'] as const)
    tally.judged[m] += row.cis;
  tally.failing.freshness += late ? row.cis : row.unseen;
  tally.failing.staleness += row.stale;
  tally.failing.orphans += row.orphans;
  tally.failing.duplicates += row.duplicates;
  tally.failing.completeness += row.incomplete;
  tally.completeness += row.completeness;
}

export function addRuleCounts(tally: Tally, row: RuleCountRow): void {
  tally.judged.rules += row.applies;
  tally.failing.rules += row.applies - row.passes;
}

const round = (score: number) => Math.round(score * 10) / 10;

/**
 * A group's scores: a measure's is the share of what it judged that passes (completeness: the mean
 * of the CIs' weighted completeness), the overall one the weighted mean of the measures that
 * judged anything.
 */
export function figuresOf(tally: Tally, settings: QualitySettings): GroupFigures {
  const measures = {} as Record<Measure, MeasureFigure>;
  let weighted = 0;
  let weights = 0;
  for (const m of MEASURES) {
    const items = tally.judged[m];
    const passing = m === 'completeness' ? tally.completeness : items - tally.failing[m];
    const score = items > 0 ? round((100 * passing) / items) : null;
    measures[m] = { items, failing: tally.failing[m], score };
    if (score !== null && settings.weights[m] > 0) {
      weighted += settings.weights[m] * score;
      weights += settings.weights[m];
    }
  }
  return { cis: tally.cis, score: weights > 0 ? round(weighted / weights) : null, measures };
}

/** Tallies by a key of the counter rows. */
export function tallyBy(
  rows: readonly CountRow[],
  rules: readonly RuleCountRow[],
  key: (row: CountRow | RuleCountRow) => string,
  late: (sourceId: string) => boolean,
): Map<string, Tally> {
  const tallies = new Map<string, Tally>();
  const of = (k: string) => tallies.get(k) ?? tallies.set(k, emptyTally()).get(k)!;
  for (const row of rows) addCounts(of(key(row)), row, late(row.source_id));
  for (const row of rules) addRuleCounts(of(key(row)), row);
  return tallies;
}
