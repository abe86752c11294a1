import { uuidv7 } from 'uuidv7';
import { mayActOnOwned } from '../../platform/auth/owners.js';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { conflict, forbidden, notFound } from '../../platform/errors.js';
import { MAX_VIEWS_PER_OWNER, type NewSavedView } from './schema.js';
import {
  deleteSavedView,
  findSavedView,
  insertSavedView,
  listSavedViews,
  lockAndCountOwned,
  type Owner,
  type SavedViewRow,
} from './store.js';

export type { SavedViewRow } from './store.js';

/** Who owns what the principal saves: the person behind a user token or session, else the key. */
export const ownerOf = (principal: Principal): Owner =>
  principal.kind === 'user' ? { userId: principal.id, apiKeyId: null } : { userId: null, apiKeyId: principal.id };

export const isOwner = (principal: Principal, row: SavedViewRow): boolean =>
  row.owner_kind === principal.kind && row.owner_id === principal.id;

/** The principal's own views and the tenant's shared ones. */
export function savedViewsOf(app: AppContext, principal: Principal, view: string | undefined): Promise<SavedViewRow[]> {
  return listSavedViews(app.sql, principal.tenantId, ownerOf(principal), view);
}

/** A view the principal may open: its own, or one shared in the tenant; anything else is a 404. */
export async function savedViewFor(app: AppContext, principal: Principal, id: string): Promise<SavedViewRow> {
  const row = await findSavedView(app.sql, principal.tenantId, id);
  if (!row || (!row.shared && !isOwner(principal, row))) throw notFound('Saved view not found', { view_id: id });
  return row;
}

/** Saves a view under a name its owner has not used for that view yet; at most MAX_VIEWS_PER_OWNER each. */
export function saveView(app: AppContext, principal: Principal, body: NewSavedView): Promise<SavedViewRow> {
  const owner = ownerOf(principal);
  return app.sql.begin(async (tx) => {
    if ((await lockAndCountOwned(tx, principal.tenantId, owner)) >= MAX_VIEWS_PER_OWNER) {
      throw conflict(`At most ${MAX_VIEWS_PER_OWNER} saved views each: delete one first`, {
        limit: MAX_VIEWS_PER_OWNER,
      });
    }
    const id = uuidv7();
    const saved = await insertSavedView(tx, principal.tenantId, owner, {
      id,
      name: body.name.trim(),
      view: body.view,
      query: body.query,
      shared: body.shared,
      createdAt: app.now(),
    });
    if (!saved)
      throw conflict(`You have a saved ${body.view} view named "${body.name.trim()}" already`, {
        name: body.name.trim(),
        view: body.view,
      });
    return (await findSavedView(tx, principal.tenantId, id))!;
  });
}

/**
 * Deletes a view. A private view is its owner's alone (a 404 to anyone else); a shared one is
 * deleted by its owner or by a principal whose rights cover the owner's (a 403 to others).
 */
export async function removeView(app: AppContext, principal: Principal, id: string): Promise<void> {
  const row = await findSavedView(app.sql, principal.tenantId, id);
  if (!row || (!row.shared && !isOwner(principal, row))) throw notFound('Saved view not found', { view_id: id });
  const owner =
    row.owner_kind === 'user' ? { userId: row.owner_id, apiKeyId: null } : { userId: null, apiKeyId: row.owner_id };
  if (!isOwner(principal, row) && !(await mayActOnOwned(app.sql, principal, owner))) {
    throw forbidden('Only the owner of a saved view, or a principal holding all its owner holds, can delete it', {
      view_id: id,
      reason: 'not_owner',
    });
  }
  await deleteSavedView(app.sql, principal.tenantId, id);
}
