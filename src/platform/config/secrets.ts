import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type Env } from './env.js';

const MIN_SECRET_LENGTH = 32;

/**
 * The secret signs cursors and keys the API-key hash. In embedded mode it is generated once and
 * kept in the data directory (mode 0600), so that keys and cursors survive restarts; with a real
 * PostgreSQL several replicas must share it, so it has to be given explicitly.
 */
export function resolveSecret(env: Env, dataDir: string, embedded: boolean): string {
  const given = env.CINV_SECRET;
  if (given) {
    if (given.length < MIN_SECRET_LENGTH) {
      throw new ConfigError('CINV_SECRET', `must be at least ${MIN_SECRET_LENGTH} characters long`);
    }
    return given;
  }
  if (!embedded) {
    throw new ConfigError('CINV_SECRET', 'is required when DATABASE_URL is set (all replicas must share it)');
  }
  const file = path.join(dataDir, 'secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}

/** 32 bytes, written as 64 hex digits or base64 (`openssl rand -base64 32`). */
export function parseMasterKey(variable: string, raw: string): Buffer {
  const text = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) key = Buffer.from(text, 'base64');
  if (key?.length !== 32)
    throw new ConfigError(variable, 'must be 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)');
  return key;
}

/**
 * The master key wraps the tenants' data keys. On the embedded database it is generated once and
 * kept in the data directory (mode 0600) beside the secret; with a real PostgreSQL every replica
 * needs the same one, so it must be given. Without it, storing credentials is refused.
 */
export function resolveMasterKey(env: Env, dataDir: string, embedded: boolean): Buffer | undefined {
  if (env.CINV_MASTER_KEY) return parseMasterKey('CINV_MASTER_KEY', env.CINV_MASTER_KEY);
  if (!embedded) return undefined;
  const file = path.join(dataDir, 'master.key');
  if (existsSync(file)) return parseMasterKey(file, readFileSync(file, 'utf8'));
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}
