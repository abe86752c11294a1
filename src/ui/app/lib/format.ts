const number = new Intl.NumberFormat('en');

export const count = (value: number): string => number.format(value);

export type TimeZone = 'local' | 'utc';
const ZONE_KEY = 'cinv-time-zone';

interface Storage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}
// read through globalThis: the pure parts of this module also run (and are tested) outside a browser
const storage = (): Storage | undefined => (globalThis as { localStorage?: Storage }).localStorage;

function storedZone(): TimeZone {
  try {
    return storage()?.getItem(ZONE_KEY) === 'utc' ? 'utc' : 'local';
  } catch {
    return 'local';
  }
}

let zone: TimeZone = storedZone();

/** The zone every time is shown and typed in: the browser's, or UTC; remembered in this browser. */
export const timeZone = (): TimeZone => zone;

export function setTimeZone(next: TimeZone): void {
  zone = next;
  try {
    if (next === 'utc') storage()?.setItem(ZONE_KEY, 'utc');
    else storage()?.removeItem(ZONE_KEY);
  } catch {
    // storage refused (private mode): the choice lasts for this page
  }
}

/** `UTC`, or the browser's zone by name and offset now: `Europe/Berlin (UTC+01:00)`. */
export function zoneLabel(which: TimeZone = zone, at = new Date()): string {
  if (which === 'utc') return 'UTC';
  const minutes = -at.getTimezoneOffset();
  const pad = (n: number) => String(n).padStart(2, '0');
  const offset = `UTC${minutes < 0 ? '−' : '+'}${pad(Math.floor(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`;
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return name && name !== 'UTC' ? `${name} (${offset})` : offset;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The calendar fields of an instant in the chosen zone. */
function fields(date: Date, which: TimeZone) {
  return which === 'utc'
    ? {
        y: date.getUTCFullYear(),
        mo: date.getUTCMonth() + 1,
        d: date.getUTCDate(),
        h: date.getUTCHours(),
        mi: date.getUTCMinutes(),
        s: date.getUTCSeconds(),
      }
    : {
        y: date.getFullYear(),
        mo: date.getMonth() + 1,
        d: date.getDate(),
        h: date.getHours(),
        mi: date.getMinutes(),
        s: date.getSeconds(),
      };
}

/** `2026-11-23 10:15:02` in the chosen zone (see `timeZone`). */
export function dateTime(value: string | null | undefined, which: TimeZone = zone): string {
  if (!value) return '—';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const f = fields(date, which);
  return `${f.y}-${pad(f.mo)}-${pad(f.d)} ${pad(f.h)}:${pad(f.mi)}:${pad(f.s)}`;
}

/** `10:15` in the chosen zone: the end of a span whose start names the day. */
export function timeOfDay(value: string, which: TimeZone = zone): string {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const f = fields(date, which);
  return `${pad(f.h)}:${pad(f.mi)}`;
}

/** An instant as typed in a time input: `2026-11-23 10:15` (`:02` with seconds), in the chosen zone. */
export function toTimeInput(iso: string | undefined, seconds = false, which: TimeZone = zone): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const f = fields(date, which);
  return `${f.y}-${pad(f.mo)}-${pad(f.d)} ${pad(f.h)}:${pad(f.mi)}${seconds ? `:${pad(f.s)}` : ''}`;
}

/**
 * What a time input holds, as an ISO instant: `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` or with `:SS`
 * (a `T` for the space too), read in the chosen zone. `undefined` for an empty input, `null` for
 * one that is not a time.
 */
export function fromTimeInput(value: string, which: TimeZone = zone): string | undefined | null {
  const text = value.trim();
  if (!text) return undefined;
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text);
  if (!match) return null;
  const [y, mo, d, h, mi, s] = match.slice(1).map((part) => Number(part ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const date = which === 'utc' ? new Date(Date.UTC(y, mo - 1, d, h, mi, s)) : new Date(y, mo - 1, d, h, mi, s);
  // Date rolls 2026-02-30 over into March: a day or hour that does not exist is not a time
  const back = fields(date, which);
  if (Number.isNaN(date.getTime()) || back.mo !== mo || back.d !== d || back.h !== h || back.mi !== mi) return null;
  return date.toISOString();
}

/** `3 min ago`, `in 2 h` */
export function relative(value: string | null | undefined, now = Date.now()): string {
  if (!value) return '—';
  const seconds = Math.round((new Date(value).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  const [amount, unit] =
    abs < 60
      ? [abs, 's']
      : abs < 3600
        ? [Math.round(abs / 60), 'min']
        : abs < 86_400
          ? [Math.round(abs / 3600), 'h']
          : [Math.round(abs / 86_400), 'd'];
  return seconds < 0 ? `${amount} ${unit} ago` : `in ${amount} ${unit}`;
}

/** A JSON value in one line, for table cells and diffs of scalars. */
export function scalar(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
