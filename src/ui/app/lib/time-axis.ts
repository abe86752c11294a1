import { dateTime, timeOfDay, timeZone, type TimeZone } from './format.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Steps of a time axis, finest first: the first that leaves at most MAX_TICKS labels is taken. */
const TICK_STEPS = [HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY];
const MAX_TICKS = 8;

/**
 * Where the time axis is labelled: round steps (hours, days, weeks) across the window, on the
 * boundaries of the zone times are shown in, each labelled with the time, or with the date where a
 * day begins.
 */
export function timeTicks(from: number, to: number, which: TimeZone = timeZone()): { at: number; label: string }[] {
  const offsetMs = which === 'utc' ? 0 : -new Date(from).getTimezoneOffset() * 60_000;
  const step =
    TICK_STEPS.find((candidate) => (to - from) / candidate <= MAX_TICKS) ?? TICK_STEPS[TICK_STEPS.length - 1]!;
  const first = Math.ceil((from + offsetMs) / step) * step - offsetMs;
  const ticks: { at: number; label: string }[] = [];
  for (let at = first; at <= to; at += step) {
    const iso = new Date(at).toISOString();
    const day = dateTime(iso, which).slice(5, 10);
    const time = timeOfDay(iso, which);
    ticks.push({ at, label: step >= DAY || time === '00:00' ? day : time });
  }
  return ticks;
}
