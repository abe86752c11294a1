import { ConfigError, type Env } from './env.js';

export interface RateLimitOverride {
  /** A path prefix such as `/api/v1/changes`; the longest matching prefix wins. */
  prefix: string;
  method: string | undefined;
  limit: number;
  burst: number;
}

/** `GET /api/v1/changes=20/20,/api/v1/changes/stats=30` : [METHOD ]PREFIX=LIMIT[/BURST], comma-separated. */
export function rateLimitOverrides(env: Env): RateLimitOverride[] {
  const raw = env.CINV_RATE_LIMIT_OVERRIDES?.trim();
  if (!raw) return [];
  const overrides = raw.split(',').map((part) => {
    const match = /^\s*(?:(GET|POST|PUT|PATCH|DELETE)\s+)?(\/[^=\s]*)\s*=\s*(\d+)(?:\/(\d+))?\s*$/i.exec(part);
    if (!match)
      throw new ConfigError(
        'CINV_RATE_LIMIT_OVERRIDES',
        `"${part.trim()}": expected [METHOD ]PATH_PREFIX=PER_MINUTE[/BURST]`,
      );
    const limit = Number(match[3]);
    const burst = match[4] === undefined ? limit : Number(match[4]);
    if (limit < 1 || burst < 1)
      throw new ConfigError('CINV_RATE_LIMIT_OVERRIDES', `"${part.trim()}": limits must be at least 1`);
    return { method: match[1]?.toUpperCase(), prefix: match[2]!, limit, burst };
  });
  return overrides.sort((a, b) => b.prefix.length - a.prefix.length);
}
