import { parseDuration } from './duration.js';
import { ConfigError, type Env } from './env.js';

/** How long change records are kept, by default and per CI type; null is forever. */
export interface ChangeRetention {
  defaultMs: number | null;
  /** CI type → its own retention, shorter or longer than the default. */
  byType: ReadonlyMap<string, number | null>;
}

/** A retention: a duration, or `0` for forever. */
function retentionOf(name: string, raw: string): number | null {
  if (raw.trim() === '0') return null;
  const ms = parseDuration(raw.trim());
  if (ms === undefined || ms <= 0)
    throw new ConfigError(name, `expected a duration such as 90d or 400d, or 0 to keep forever, got "${raw.trim()}"`);
  return ms;
}

export function changeRetention(env: Env): ChangeRetention {
  const defaultMs = retentionOf('CINV_CHANGE_RETENTION', env.CINV_CHANGE_RETENTION || '400d');
  const byType = new Map<string, number | null>();
  for (const part of (env.CINV_CHANGE_RETENTION_OVERRIDES ?? '').split(',')) {
    if (!part.trim()) continue;
    const match = /^\s*([a-z0-9][a-z0-9_.-]*)\s*=\s*(\S+)\s*$/i.exec(part);
    if (!match)
      throw new ConfigError(
        'CINV_CHANGE_RETENTION_OVERRIDES',
        `"${part.trim()}": expected CI_TYPE=DURATION (or CI_TYPE=0 for forever)`,
      );
    if (byType.has(match[1]!)) throw new ConfigError('CINV_CHANGE_RETENTION_OVERRIDES', `"${match[1]}" is given twice`);
    byType.set(match[1]!, retentionOf('CINV_CHANGE_RETENTION_OVERRIDES', match[2]!));
  }
  return { defaultMs, byType };
}
