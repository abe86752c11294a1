/** Time windows for the change views: presets by name, or explicit bounds from the URL. */
export const PRESETS: [string, string, number][] = [
  ['1h', 'Last hour', 3_600_000],
  ['24h', 'Last 24 hours', 86_400_000],
  ['7d', 'Last 7 days', 7 * 86_400_000],
  ['30d', 'Last 30 days', 30 * 86_400_000],
];

export interface Window {
  start?: string;
  end?: string;
}

/**
 * `range` wins when it names a preset; otherwise `from` / `to` as given (ISO date-times or dates).
 * A preset is resolved against `now`: a view passes its place's `at`, the moment of the navigation
 * that made it, since a start computed at each render would change the view's load key at each
 * render and load again without end.
 */
export function windowOf(params: URLSearchParams, now: number): Window {
  const preset = PRESETS.find(([name]) => name === params.get('range'));
  if (preset) return { start: new Date(now - preset[2]).toISOString() };
  return { start: params.get('from') ?? undefined, end: params.get('to') ?? undefined };
}
