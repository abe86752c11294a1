import { parseDuration } from './duration.js';

/** Reading one environment variable, or refusing it by name. */

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}

export type Env = Record<string, string | undefined>;

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `expected an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

export function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1' || raw === 'yes') return true;
  if (raw === 'false' || raw === '0' || raw === 'no') return false;
  throw new ConfigError(name, `expected true or false, got "${env[name]}"`);
}

export function duration(env: Env, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  const ms = parseDuration(raw);
  if (ms === undefined || ms <= 0) {
    throw new ConfigError(name, `expected a duration such as 30m, 24h or 7d, got "${raw}"`);
  }
  return ms;
}

/** A duration that may be switched off: unset is undefined (the default applies), `off` or `0` is 0. */
export function durationOrOff(env: Env, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (raw === 'off' || raw === '0') return 0;
  return duration(env, name, raw);
}
