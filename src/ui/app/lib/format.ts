const number = new Intl.NumberFormat('en');

export const count = (value: number): string => number.format(value);

/** `2026-11-23 10:15:02` in the browser's time zone, with the ISO instant as its title. */
export function dateTime(value: string | null | undefined): string {
  if (!value) return '—';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** `3 min ago`, `in 2 h` */
export function relative(value: string | null | undefined, now = Date.now()): string {
  if (!value) return '—';
  const seconds = Math.round((new Date(value).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  const [amount, unit] =
    abs < 60 ? [abs, 's'] : abs < 3600 ? [Math.round(abs / 60), 'min'] : abs < 86_400 ? [Math.round(abs / 3600), 'h'] : [Math.round(abs / 86_400), 'd'];
  return seconds < 0 ? `${amount} ${unit} ago` : `in ${amount} ${unit}`;
}

/** A JSON value in one line, for table cells and diffs of scalars. */
export function scalar(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
