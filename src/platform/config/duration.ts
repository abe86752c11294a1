const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a duration such as `90s`, `15m`, `24h`, `7d` or `1w` (a bare number is seconds)
 * into milliseconds. Returns undefined for anything else.
 */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$/i.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]);
  const unit = UNITS[(match[2] ?? 's').toLowerCase()];
  return unit === undefined ? undefined : Math.round(value * unit);
}
