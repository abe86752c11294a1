import { validationFailed } from '../errors.js';

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: ISO 8601 text (and PostgreSQL) take four-digit years. */
const MAX_TIME = Date.UTC(10000, 0, 1);

export interface DateWindow {
  /** Inclusive lower bound, ISO 8601. */
  from: string | undefined;
  /** Upper bound, ISO 8601: inclusive for a date-time, exclusive for the day after a date. */
  until: string | undefined;
  untilExclusive: boolean;
}

/**
 * The `start_date`/`end_date` of the change, search and audit routes as bounds on a timestamp: a date-only
 * `start_date` is midnight UTC, a date-only `end_date` covers that whole UTC day; an end before the
 * start is a 422 naming `end_date`.
 */
export function dateWindow(startDate: string | undefined, endDate: string | undefined): DateWindow {
  const from = startDate && DATE_ONLY.test(startDate) ? `${startDate}T00:00:00Z` : startDate;
  let untilExclusive = endDate !== undefined && DATE_ONLY.test(endDate);
  let until = untilExclusive ? new Date(Date.parse(`${endDate}T00:00:00Z`) + DAY_MS).toISOString() : endDate;
  // the day after 9999-12-31 is beyond what timestamps hold: that end date bounds nothing
  if (until !== undefined && untilExclusive && Date.parse(until) >= MAX_TIME) {
    until = undefined;
    untilExclusive = false;
  }
  if (from && until && Date.parse(until) < Date.parse(from)) {
    throw validationFailed([{ field: 'end_date', location: 'query', message: 'must not be before start_date' }]);
  }
  return { from, until, untilExclusive };
}
