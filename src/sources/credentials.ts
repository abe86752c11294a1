import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { CredentialDocument } from '../collector-types/plugin.js';
import type { Queryable, Sql } from '../db/database.js';

/**
 * Envelope encryption of source credentials with node:crypto's AES-256-GCM. Each tenant has data
 * keys; each is stored wrapped (encrypted) by the master key, with the master key's fingerprint.
 * A credential document is encrypted under the tenant's newest data key with a fresh random
 * 96-bit nonce, and its additional authenticated data names the tenant, the source and the key
 * version: a ciphertext copied to another source, another tenant or labelled with another key
 * version does not decrypt.
 */

export class CredentialsUnavailable extends Error {}

/**
 * Strikes a credential's values out of a text: an error a collector type raised may quote a server
 * that echoed what it was sent. Covers each value (also as written inside JSON), each long line of a multi-line value (PEM), and
 * the HTTP Basic encoding of a username and password.
 */
export function redactCredentials(text: string, document: CredentialDocument | undefined): string {
  if (!document) return text;
  const secrets = new Set<string>();
  for (const [field, value] of Object.entries(document)) {
    if (field === 'type' || typeof value !== 'string') continue;
    secrets.add(value);
    secrets.add(JSON.stringify(value).slice(1, -1));
    for (const line of value.split(/\r?\n/)) if (line.trim().length >= 16) secrets.add(line.trim());
  }
  if (document.type === 'basic') secrets.add(Buffer.from(`${document.username}:${document.password}`).toString('base64'));
  let redacted = text;
  // longest first, so a value containing another is struck out whole
  for (const secret of [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length)) {
    redacted = redacted.split(secret).join('[redacted]');
  }
  return redacted;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Identifies a master key without revealing it. */
export const fingerprintOf = (masterKey: Buffer): string => createHash('sha256').update('cinv master key v1').update(masterKey).digest('hex').slice(0, 16);

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
const credentialAad = (tenantId: string, sourceId: string, version: number) => `cinv source credentials v1|${tenantId}|${sourceId}|${version}`;

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
    if (!master) throw new CredentialsUnavailable(`the data key of this tenant is wrapped by another master key (${fingerprint})`);
    return open(master, wrapped.subarray(0, NONCE_BYTES), wrapped.subarray(NONCE_BYTES), wrapAad(tenantId, version));
  }
}

interface DataKeyRow {
  version: number;
  wrapped: Buffer;
  master_fingerprint: string;
}

/** The tenant's newest data key, created at the tenant's first credential. */
async function currentDataKey(sql: Queryable, keys: MasterKeys, tenantId: string): Promise<{ version: number; key: Buffer }> {
  const [row] = await sql<DataKeyRow[]>`
    select version, wrapped, master_fingerprint from tenant_data_keys where tenant_id = ${tenantId} order by version desc limit 1`;
  if (row) return { version: row.version, key: keys.unwrap(tenantId, row.version, row.wrapped, row.master_fingerprint) };
  const key = randomBytes(32);
  const { wrapped, fingerprint } = keys.wrap(tenantId, 1, key);
  await sql`
    insert into tenant_data_keys (tenant_id, version, wrapped, master_fingerprint) values (${tenantId}, 1, ${wrapped}, ${fingerprint})
    on conflict do nothing`;
  // two first credentials at once: the one stored wins, both use it
  return currentDataKey(sql, keys, tenantId);
}

export interface SealedCredentials {
  keyVersion: number;
  nonce: Buffer;
  ciphertext: Buffer;
}

export async function encryptCredentials(sql: Queryable, keys: MasterKeys, tenantId: string, sourceId: string, document: CredentialDocument): Promise<SealedCredentials> {
  const { version, key } = await currentDataKey(sql, keys, tenantId);
  const { nonce, sealed } = seal(key, Buffer.from(JSON.stringify(document), 'utf8'), credentialAad(tenantId, sourceId, version));
  return { keyVersion: version, nonce, ciphertext: sealed };
}

export async function decryptCredentials(sql: Queryable, keys: MasterKeys, tenantId: string, sourceId: string, sealed: SealedCredentials): Promise<CredentialDocument> {
  const [row] = await sql<DataKeyRow[]>`
    select version, wrapped, master_fingerprint from tenant_data_keys where tenant_id = ${tenantId} and version = ${sealed.keyVersion}`;
  if (!row) throw new CredentialsUnavailable('the data key of these credentials is gone');
  const key = keys.unwrap(tenantId, row.version, row.wrapped, row.master_fingerprint);
  try {
    return JSON.parse(open(key, sealed.nonce, sealed.ciphertext, credentialAad(tenantId, sourceId, sealed.keyVersion)).toString('utf8')) as CredentialDocument;
  } catch {
    throw new CredentialsUnavailable('the stored credentials do not decrypt for this source');
  }
}

export async function storeCredentials(sql: Queryable, keys: MasterKeys, tenantId: string, sourceId: string, document: CredentialDocument, now: Date): Promise<void> {
  const sealed = await encryptCredentials(sql, keys, tenantId, sourceId, document);
  await sql`
    insert into source_credentials (source_id, tenant_id, credential_type, key_version, nonce, ciphertext, updated_at)
    values (${sourceId}, ${tenantId}, ${document.type}, ${sealed.keyVersion}, ${sealed.nonce}, ${sealed.ciphertext}, ${now})
    on conflict (source_id) do update set credential_type = excluded.credential_type, key_version = excluded.key_version,
      nonce = excluded.nonce, ciphertext = excluded.ciphertext, updated_at = excluded.updated_at`;
}

export async function loadCredentials(sql: Queryable, keys: MasterKeys, tenantId: string, sourceId: string): Promise<CredentialDocument | undefined> {
  const [row] = await sql<{ key_version: number; nonce: Buffer; ciphertext: Buffer }[]>`
    select key_version, nonce, ciphertext from source_credentials where source_id = ${sourceId} and tenant_id = ${tenantId}`;
  if (!row) return undefined;
  return decryptCredentials(sql, keys, tenantId, sourceId, { keyVersion: row.key_version, nonce: row.nonce, ciphertext: row.ciphertext });
}

export async function destroyCredentials(sql: Queryable, tenantId: string, sourceId: string): Promise<boolean> {
  const result = await sql`delete from source_credentials where source_id = ${sourceId} and tenant_id = ${tenantId}`;
  return result.count > 0;
}

/**
 * Re-wraps every data key still wrapped by another master key under the current one, a row per
 * transaction: interrupting it leaves each row wrapped by one key or the other (both are accepted
 * while CINV_MASTER_KEY_PREVIOUS names the old one), and running it again continues. Ciphertexts
 * of credentials are not touched. Returns how many keys were re-wrapped.
 */
export async function rotateMasterKey(sql: Sql, keys: MasterKeys, progress?: (done: number, total: number) => void): Promise<{ rewrapped: number; remaining: number }> {
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
  const [left] = await sql<{ n: number }[]>`select count(*)::int as n from tenant_data_keys where master_fingerprint <> ${keys.current.fingerprint}`;
  return { rewrapped, remaining: left?.n ?? 0 };
}
