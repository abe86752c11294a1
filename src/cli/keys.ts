import { userInfo } from 'node:os';
import { generateApiKey, TIERS } from '../platform/auth/api-key-format.js';
import { isPermission, type DataScope, type Permission, type Tier } from '../platform/auth/principal.js';
import { loadConfig } from '../platform/config/config.js';
import { parseDuration } from '../platform/config/duration.js';
import type { Database, Sql } from '../platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../platform/tenants.js';
import { many, printTable, single, UsageError, withDatabase, type Flags } from './shared.js';

async function resolveScopes(db: Database, specs: string[]): Promise<DataScope[]> {
  const { findSourceByName } = await import('../collection/sources/service.js');
  const scopes: DataScope[] = [];
  for (const spec of specs) {
    if (spec === '*') {
      scopes.push({ sourceId: null, scopeId: null });
      continue;
    }
    const colon = spec.indexOf(':');
    const sourceName = colon === -1 ? spec : spec.slice(0, colon);
    const scopeId = colon === -1 ? null : spec.slice(colon + 1) || null;
    const source = await findSourceByName(db.sql, DEFAULT_TENANT_ID, sourceName);
    if (!source) throw new UsageError(`--scope ${spec}: no source named "${sourceName}"`);
    scopes.push({ sourceId: source.id, scopeId });
  }
  return scopes;
}

export async function keysCreateCommand(flags: Flags): Promise<void> {
  const tier = single(flags, 'tier') as Tier;
  const name = single(flags, 'name')!;
  if (!['adm', 'svc', 'ro'].includes(tier))
    throw new UsageError('--tier must be adm, svc or ro (user tokens are issued to users)');
  const permissions = many(flags, 'permission');
  const scopeSpecs = many(flags, 'scope');
  if (tier === 'adm' && (permissions.length > 0 || scopeSpecs.length > 0)) {
    throw new UsageError('adm keys hold everything: --permission and --scope do not apply');
  }
  if (tier === 'ro' && permissions.length > 0) {
    throw new UsageError(
      '--permission applies to svc keys only; ro keys read with the fixed permissions of their tier (--scope limits their data)',
    );
  }
  const bad = permissions.find((p) => !isPermission(p));
  if (bad) throw new UsageError(`--permission ${bad}: expected RESOURCE:ACTION, e.g. configuration_items:read`);
  const expiresIn = single(flags, 'expires-in', false);
  const expiresMs = expiresIn === undefined ? undefined : parseDuration(expiresIn);
  if (expiresIn !== undefined && !expiresMs)
    throw new UsageError(`--expires-in ${expiresIn}: expected a duration such as 90d`);
  const config = loadConfig();
  const { issueApiKey } = await import('../platform/auth/api-keys.js');
  await withDatabase(config, flags, async (db) => {
    const scopes = await resolveScopes(db, scopeSpecs);
    const { id, key } = await issueApiKey(db.sql, config.secret, {
      tenantId: DEFAULT_TENANT_ID,
      name,
      tier: tier as 'adm' | 'svc' | 'ro',
      permissions: permissions as Permission[],
      // an ro key without --scope reads all data
      scopes: tier === 'ro' && scopeSpecs.length === 0 ? undefined : scopes,
      expiresAt: expiresMs ? new Date(Date.now() + expiresMs) : null,
    });
    await auditFromCommandLine(db.sql, 'api_key.created', { type: 'api_key', id, name }, { tier });
    console.error(`created ${tier} key "${name}" (id ${id}); it is shown once, store it now:`);
    console.log(key);
  });
}

export async function usersPromoteCommand(email: string | undefined, flags: Flags): Promise<void> {
  if (!email)
    throw new UsageError(
      'users promote needs the email of a user who exists (signed in once, or created through the API)',
    );
  const config = loadConfig();
  const { findUserByEmail, setSuperadmin } = await import('../identity/users/service.js');
  await withDatabase(config, flags, async (db) => {
    const user = await findUserByEmail(db.sql, DEFAULT_TENANT_ID, email);
    if (!user) throw new UsageError(`no user with the email ${email}`);
    await setSuperadmin(db.sql, DEFAULT_TENANT_ID, user.id, true);
    await auditFromCommandLine(
      db.sql,
      'user.promoted',
      { type: 'user', id: user.id, name: user.name },
      { superadmin: true },
    );
    console.error(`${user.name} <${email}> is a superadmin`);
  });
}

/** The audit row of something done on the command line (its actor is the system, not a key). */
async function auditFromCommandLine(
  sql: Sql,
  type: 'user.promoted' | 'api_key.created' | 'api_key.revoked',
  target: { type: string; id: string; name: string },
  details: Record<string, unknown>,
): Promise<void> {
  const { insertAuditEvents } = await import('../platform/audit/store.js');
  await insertAuditEvents(sql, [
    {
      tenant_id: DEFAULT_TENANT_ID,
      occurred_at: new Date().toISOString(),
      event_type: type,
      outcome: 'success',
      actor_kind: 'system',
      actor_id: null,
      actor_name: `cli (${userInfo().username})`,
      target_type: target.type,
      target_id: target.id,
      target_name: target.name,
      client_address: null,
      user_agent: null,
      request_id: null,
      details: { ...details, via: 'cli' },
    },
  ]);
}

export async function keysListCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { listApiKeys } = await import('../platform/auth/api-key-store.js');
  await withDatabase(config, flags, async (db) => {
    const keys = await listApiKeys(db.sql, DEFAULT_TENANT_ID, { includeRevoked: flags['include-revoked'] === true });
    const rows = keys.map((k) => [
      k.id,
      k.tier,
      k.name,
      `…${k.key_hint}`,
      k.created_at.toISOString().slice(0, 16),
      k.expires_at?.toISOString().slice(0, 16) ?? '-',
      k.last_used_at?.toISOString().slice(0, 16) ?? '-',
      k.revoked_at ? 'revoked' : 'active',
    ]);
    printTable(['id', 'tier', 'name', 'hint', 'created', 'expires', 'last used', 'state'], rows);
  });
}

export async function keysRevokeCommand(id: string | undefined, flags: Flags): Promise<void> {
  if (!id || !/^[0-9a-f-]{36}$/i.test(id))
    throw new UsageError('keys revoke needs the id of a key (see `cinv keys list`)');
  const config = loadConfig();
  const { listApiKeys, revokeApiKey } = await import('../platform/auth/api-key-store.js');
  await withDatabase(config, flags, async (db) => {
    const [key] = await listApiKeys(db.sql, DEFAULT_TENANT_ID, { id, includeRevoked: true });
    if (!key) throw new UsageError(`no API key with the id ${id}`);
    if (!(await revokeApiKey(db.sql, DEFAULT_TENANT_ID, id, new Date()))) {
      console.error(`key "${key.name}" was revoked already`);
      return;
    }
    await auditFromCommandLine(db.sql, 'api_key.revoked', { type: 'api_key', id, name: key.name }, {});
    console.error(`revoked ${key.tier} key "${key.name}" (id ${id}); it is refused from the next request on`);
  });
}

/**
 * Re-wraps the tenants' data keys under CINV_MASTER_KEY. The old master key must be readable as
 * CINV_MASTER_KEY_PREVIOUS (on every replica, so that they read both while this runs); the
 * credential ciphertexts stay as they are. Safe to interrupt and run again.
 */
export async function rotateMasterCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  if (!config.masterKey) throw new UsageError('keys rotate-master needs the new master key in CINV_MASTER_KEY');
  if (!config.previousMasterKey)
    throw new UsageError('keys rotate-master needs the old master key in CINV_MASTER_KEY_PREVIOUS');
  const { MasterKeys, rotateMasterKey } = await import('../collection/sources/credentials.js');
  await withDatabase(config, flags, async (db) => {
    const keys = new MasterKeys(config.masterKey!, config.previousMasterKey);
    const { Progress } = await import('../platform/progress.js');
    const progress = new Progress('data keys re-wrapped', 0, process.stderr);
    const { rewrapped, remaining } = await rotateMasterKey(db.sql, keys, (done, total) => progress.update(done, total));
    if (rewrapped > 0) progress.finish(rewrapped);
    console.error(
      `re-wrapped ${rewrapped} data key(s) under the master key ${keys.current.fingerprint}; ${remaining} left under another key`,
    );
    if (remaining > 0)
      throw new UsageError(
        `${remaining} data key(s) are wrapped by a master key that is neither CINV_MASTER_KEY nor CINV_MASTER_KEY_PREVIOUS`,
      );
  });
}

export function keysGenerateCommand(flags: Flags): void {
  const tier = (single(flags, 'tier', false) ?? 'adm') as Tier;
  if (!TIERS.includes(tier)) throw new UsageError('--tier must be adm, svc, ro or usr');
  console.log(generateApiKey(tier));
}
