import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { Queryable, Sql } from '../db/database.js';
import { conflict } from '../errors.js';

/**
 * Envelope encryption of the secrets cinv keeps for a tenant (source credentials, webhook signing
 * secrets) with node:crypto's AES-256-GCM. Each tenant has data keys; each is stored wrapped
 * (encrypted) by the master key, with the master key's fingerprint. A secret is encrypted under the
 * tenant's newest data key with a fresh random 96-bit nonce, and its additional authenticated data
 * names what it belongs to and the key version: a ciphertext copied elsewhere does not decrypt.
 */

export class CredentialsUnavailable extends Error {}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Identifies a master key without revealing it. */
export const fingerprintOf = (masterKey: Buffer): string =>
  createHash('sha256').update('cinv master key v1').update(masterKey).digest('hex').slice(0, 16);

function seal(key: Buffer, plaintext: Buffer, aad: string): { nonce: Buffer; sealed: Buffer } {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { nonce, sealed: Buffer.concat([body, cipher.getAuthTag()]) };
}

function open(key: Buffer, nonce: Buffer, sealed: Buffer, aad: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
}

const wrapAad = (tenantId: string, version: number) => `cinv data key v1|${tenantId}|${version}`;

/** The master keys a process holds: the current one, and the one before a rotation. */
export class MasterKeys {
  private readonly byFingerprint = new Map<string, Buffer>();
  readonly current: { key: Buffer; fingerprint: string };

  constructor(current: Buffer, previous?: Buffer) {
    this.current = { key: current, fingerprint: fingerprintOf(current) };
    this.byFingerprint.set(this.current.fingerprint, current);
    if (previous) this.byFingerprint.set(fingerprintOf(previous), previous);
  }

  wrap(tenantId: string, version: number, dataKey: Buffer): { wrapped: Buffer; fingerprint: string } {
    const { nonce, sealed } = seal(this.current.key, dataKey, wrapAad(tenantId, version));
    return { wrapped: Buffer.concat([nonce, sealed]), fingerprint: this.current.fingerprint };
  }

  unwrap(tenantId: string, version: number, wrapped: Buffer, fingerprint: string): Buffer {
    const master = this.byFingerprint.get(fingerprint);
    if (!master)
      throw new CredentialsUnavailable(`the data key of this tenant is wrapped by another master key (${fingerprint})`);
    return open(master, wrapped.subarray(0, NONCE_BYTES), wrapped.subarray(NONCE_BYTES), wrapAad(tenantId, version));
  }
}

/**
 * The master keys of this server; without CINV_MASTER_KEY a 409 (reason master_key_missing) that
 * says what cannot be done (`what`: "Credentials cannot be stored or read").
 */
export function requireMasterKeys(config: Pick<Config, 'masterKey' | 'previousMasterKey'>, what: string): MasterKeys {
  if (!config.masterKey)
    throw conflict(`${what}: CINV_MASTER_KEY is not set on this server`, { reason: 'master_key_missing' });
  return new MasterKeys(config.masterKey, config.previousMasterKey);
}

/** A seal that cannot be opened (another master key, a damaged row) as a 409 (reason undecryptable) rather than a failure of the server. */
export function undecryptable(what: string): (error: unknown) => never {
  return (error: unknown) => {
    if (error instanceof CredentialsUnavailable)
      throw conflict(`${what} cannot be decrypted: ${error.message}`, { reason: 'undecryptable' });
    throw error;
  };
}

interface DataKeyRow {
  version: number;
  wrapped: Buffer;
  master_fingerprint: string;
}

/** The tenant's newest data key, created at the tenant's first credential. */
async function currentDataKey(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
): Promise<{ version: number; key: Buffer }> {
  const [row] = await sql<DataKeyRow[]>`
    select version, wrapped, master_fingerprint from tenant_data_keys where tenant_id = ${tenantId} order by version desc limit 1`;
  if (row)
    return { version: row.version, key: keys.unwrap(tenantId, row.version, row.wrapped, row.master_fingerprint) };
  const key = randomBytes(32);
  const { wrapped, fingerprint } = keys.wrap(tenantId, 1, key);
  await sql`
    insert into tenant_data_keys (tenant_id, version, wrapped, master_fingerprint) values (${tenantId}, 1, ${wrapped}, ${fingerprint})
    on conflict do nothing`;
  // two first credentials at once: the one stored wins, both use it
  return currentDataKey(sql, keys, tenantId);
}

export interface Sealed {
  keyVersion: number;
  nonce: Buffer;
  ciphertext: Buffer;
}

/** Seals `plaintext` under the tenant's newest data key; `aad` names what it belongs to, for that key version. */
export async function sealForTenant(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  aad: (version: number) => string,
  plaintext: Buffer,
): Promise<Sealed> {
  const { version, key } = await currentDataKey(sql, keys, tenantId);
  const { nonce, sealed } = seal(key, plaintext, aad(version));
  return { keyVersion: version, nonce, ciphertext: sealed };
}

/** Opens what sealForTenant sealed with the same `aad`; `refusal` is the error's message when it does not open. */
export async function openForTenant(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  aad: string,
  sealed: Sealed,
  refusal: string,
): Promise<Buffer> {
  const [row] = await sql<DataKeyRow[]>`
    select version, wrapped, master_fingerprint from tenant_data_keys where tenant_id = ${tenantId} and version = ${sealed.keyVersion}`;
  if (!row) throw new CredentialsUnavailable('the data key of this secret is gone');
  const key = keys.unwrap(tenantId, row.version, row.wrapped, row.master_fingerprint);
  try {
    return open(key, sealed.nonce, sealed.ciphertext, aad);
  } catch {
    throw new CredentialsUnavailable(refusal);
  }
}

/**
 * Re-wraps every data key still wrapped by another master key under the current one, a row per
 * transaction: interrupting it leaves each row wrapped by one key or the other (both are accepted
 * while CINV_MASTER_KEY_PREVIOUS names the old one), and running it again continues. Ciphertexts
 * of credentials are not touched. Returns how many keys were re-wrapped.
 */
export async function rotateMasterKey(
  sql: Sql,
  keys: MasterKeys,
  progress?: (done: number, total: number) => void,
): Promise<{ rewrapped: number; remaining: number }> {
  const stale = await sql<{ tenant_id: string; version: number }[]>`
    select tenant_id, version from tenant_data_keys where master_fingerprint <> ${keys.current.fingerprint} order by tenant_id, version`;
  let rewrapped = 0;
  for (const { tenant_id: tenantId, version } of stale) {
    await sql.begin(async (tx) => {
      const [row] = await tx<DataKeyRow[]>`
        select version, wrapped, master_fingerprint from tenant_data_keys where tenant_id = ${tenantId} and version = ${version} for update`;
      if (!row || row.master_fingerprint === keys.current.fingerprint) return;
      const dataKey = keys.unwrap(tenantId, version, row.wrapped, row.master_fingerprint);
      const { wrapped, fingerprint } = keys.wrap(tenantId, version, dataKey);
      await tx`update tenant_data_keys set wrapped = ${wrapped}, master_fingerprint = ${fingerprint} where tenant_id = ${tenantId} and version = ${version}`;
      rewrapped++;
    });
    progress?.(rewrapped, stale.length);
  }
  const [left] = await sql<
    { n: number }[]
  >`select count(*)::int as n from tenant_data_keys where master_fingerprint <> ${keys.current.fingerprint}`;
  return { rewrapped, remaining: left?.n ?? 0 };
}
