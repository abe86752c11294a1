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
  const overrides = raw ? raw.split(',').map((part) => parseOverride(part)) : [];
  // the query-language endpoint has its own limit unless an override names it
  if (!overrides.some((o) => o.prefix === QUERY_PATH)) overrides.push(queryLimit(env));
  return overrides.sort((a, b) => b.prefix.length - a.prefix.length);
}

export const QUERY_PATH = '/api/v1/query';

/** CINV_QUERY_RATE_LIMIT: PER_MINUTE[/BURST] for /api/v1/query, 60/20 by default. */
function queryLimit(env: Env): RateLimitOverride {
  const raw = env.CINV_QUERY_RATE_LIMIT?.trim() || '60/20';
  const match = /^(\d+)(?:\/(\d+))?$/.exec(raw);
  if (!match) throw new ConfigError('CINV_QUERY_RATE_LIMIT', `"${raw}": expected PER_MINUTE[/BURST]`);
  const limit = Number(match[1]);
  const burst = match[2] === undefined ? limit : Number(match[2]);
  if (limit < 1 || burst < 1) throw new ConfigError('CINV_QUERY_RATE_LIMIT', `"${raw}": limits must be at least 1`);
  return { method: undefined, prefix: QUERY_PATH, limit, burst };
}

function parseOverride(part: string): RateLimitOverride {
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
}
