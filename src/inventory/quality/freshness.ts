import type { QualitySettings } from './settings.js';
import type { SourceList } from './upkeep-store.js';

/** When a scheduled source's list is due by: its last successful list plus the interval and the margin. */
export function dueBy(source: SourceList, settings: QualitySettings): Date | null {
  const schedule = source.schedule_config;
  if (!schedule.enabled || !schedule.interval_minutes) return null;
  const from = source.listed_at ?? source.created_at;
  return new Date(new Date(from).getTime() + schedule.interval_minutes * 60_000 * (1 + settings.freshness_margin));
}

/** The sources past their schedule at `now`, by id. */
export function lateSources(sources: readonly SourceList[], settings: QualitySettings, now: Date): Set<string> {
  return new Set(
    sources
      .filter((source) => {
        const due = dueBy(source, settings);
        return due !== null && due < now;
      })
      .map((source) => source.source_id),
  );
}
