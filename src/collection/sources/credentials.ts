import type { CredentialDocument } from '../types/plugin.js';
import type { Queryable } from '../../platform/db/database.js';
import { MasterKeys, openForTenant, sealForTenant } from '../../platform/auth/envelope.js';

export { CredentialsUnavailable, fingerprintOf, MasterKeys, rotateMasterKey } from '../../platform/auth/envelope.js';

/**
 * Source credentials, sealed by the tenant's envelope encryption (auth/envelope.ts): the additional
 * authenticated data names the tenant, the source and the key version, so a ciphertext copied to
 * another source, another tenant or labelled with another key version does not decrypt.
 */

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
  if (document.type === 'basic')
    secrets.add(Buffer.from(`${document.username}:${document.password}`).toString('base64'));
  let redacted = text;
  // longest first, so a value containing another is struck out whole
  for (const secret of [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length)) {
    redacted = redacted.split(secret).join('[redacted]');
  }
  return redacted;
}

const credentialAad = (tenantId: string, sourceId: string, version: number) =>
  `cinv source credentials v1|${tenantId}|${sourceId}|${version}`;

export type { Sealed as SealedCredentials } from '../../platform/auth/envelope.js';
type SealedCredentials = import('../../platform/auth/envelope.js').Sealed;

export async function encryptCredentials(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  sourceId: string,
  document: CredentialDocument,
): Promise<SealedCredentials> {
  return sealForTenant(
    sql,
    keys,
    tenantId,
    (version) => credentialAad(tenantId, sourceId, version),
    Buffer.from(JSON.stringify(document), 'utf8'),
  );
}

export async function decryptCredentials(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  sourceId: string,
  sealed: SealedCredentials,
): Promise<CredentialDocument> {
  const plaintext = await openForTenant(
    sql,
    keys,
    tenantId,
    credentialAad(tenantId, sourceId, sealed.keyVersion),
    sealed,
    'the stored credentials do not decrypt for this source',
  );
  return JSON.parse(plaintext.toString('utf8')) as CredentialDocument;
}

export async function storeCredentials(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  sourceId: string,
  document: CredentialDocument,
  now: Date,
): Promise<void> {
  const sealed = await encryptCredentials(sql, keys, tenantId, sourceId, document);
  await sql`
    insert into source_credentials (source_id, tenant_id, credential_type, key_version, nonce, ciphertext, updated_at)
    values (${sourceId}, ${tenantId}, ${document.type}, ${sealed.keyVersion}, ${sealed.nonce}, ${sealed.ciphertext}, ${now})
    on conflict (source_id) do update set credential_type = excluded.credential_type, key_version = excluded.key_version,
      nonce = excluded.nonce, ciphertext = excluded.ciphertext, updated_at = excluded.updated_at`;
}

export async function loadCredentials(
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  sourceId: string,
): Promise<CredentialDocument | undefined> {
  const [row] = await sql<{ key_version: number; nonce: Buffer; ciphertext: Buffer }[]>`
    select key_version, nonce, ciphertext from source_credentials where source_id = ${sourceId} and tenant_id = ${tenantId}`;
  if (!row) return undefined;
  return decryptCredentials(sql, keys, tenantId, sourceId, {
    keyVersion: row.key_version,
    nonce: row.nonce,
    ciphertext: row.ciphertext,
  });
}

export async function destroyCredentials(sql: Queryable, tenantId: string, sourceId: string): Promise<boolean> {
  const result = await sql`delete from source_credentials where source_id = ${sourceId} and tenant_id = ${tenantId}`;
  return result.count > 0;
}
