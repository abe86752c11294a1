import type { Context } from 'koa';
import { auditChange } from '../../platform/audit/log.js';
import { requireMasterKeys, undecryptable } from '../../platform/auth/envelope.js';
import { coversWholeSource, type Principal } from '../../platform/auth/principal.js';
import type { CredentialDocument } from '../types/plugin.js';
import type { AppContext } from '../../context.js';
import { forbidden, notFound } from '../../platform/errors.js';
import { sourceOr404 } from './access.js';
import { destroyCredentials, loadCredentials, MasterKeys, storeCredentials } from './credentials.js';
import type { SourceRow } from './store.js';

const masterKeys = (app: AppContext) => requireMasterKeys(app.config, 'Credentials cannot be stored or read');

/**
 * The decrypted credentials a collection of the source uses: none when it has none, or when this
 * server holds no master key to decrypt them.
 */
export async function collectionCredentials(
  app: AppContext,
  tenantId: string,
  source: SourceRow,
): Promise<CredentialDocument | undefined> {
  const { config } = app;
  if (!source.credentials || !config.masterKey) return undefined;
  return loadCredentials(app.sql, new MasterKeys(config.masterKey, config.previousMasterKey), tenantId, source.id);
}

/**
 * The source whose credentials the principal sets, removes or reveals: they serve every instance
 * of the source, so only a principal whose data scopes cover the whole source may handle them
 * (403 `whole_source_required`, audited as the other refusals are); a source it cannot see is a 404.
 */
async function credentialSourceOr403(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow> {
  const source = await sourceOr404(app, principal, rawId);
  if (!coversWholeSource(principal, source.id)) {
    throw forbidden(
      'Credentials serve every instance of the source: only a principal holding the whole source may handle them',
      {
        reason: 'whole_source_required',
        source_id: source.id,
      },
    );
  }
  return source;
}

/** Encrypts and stores a source's credentials; the tenant's first data key is created in the same transaction. */
export async function setCredentials(
  app: AppContext,
  principal: Principal,
  rawId: string,
  document: CredentialDocument,
): Promise<void> {
  const source = await credentialSourceOr403(app, principal, rawId);
  const keys = masterKeys(app);
  await app.sql.begin((tx) => storeCredentials(tx, keys, principal.tenantId, source.id, document, app.now()));
}

/** Removes a source's credentials; a 404 when it has none. */
export async function removeCredentials(app: AppContext, principal: Principal, rawId: string): Promise<void> {
  const source = await credentialSourceOr403(app, principal, rawId);
  if (!(await destroyCredentials(app.sql, principal.tenantId, source.id)))
    throw notFound('This source has no credentials', { source_id: rawId });
}

/**
 * A source's credentials, decrypted, with the `credentials.revealed` audit event written in the
 * same transaction before they leave: a reveal that cannot be recorded does not happen.
 */
export async function revealCredentials(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  rawId: string,
): Promise<CredentialDocument> {
  const source = await credentialSourceOr403(app, principal, rawId);
  const keys = masterKeys(app);
  return app.sql.begin(async (tx) => {
    const document = await loadCredentials(tx, keys, principal.tenantId, source.id).catch(
      undecryptable('The credentials'),
    );
    if (!document) throw notFound('This source has no credentials', { source_id: rawId });
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'credentials.revealed',
      { type: 'source', id: source.id, name: source.name },
      { credential_type: document.type },
    );
    return document;
  });
}
