import type { Principal } from '../../platform/auth/principal.js';
import { isOwner, type SavedViewRow } from './service.js';

export const presentSavedView = (row: SavedViewRow, principal: Principal) => ({
  id: row.id,
  name: row.name,
  view: row.view,
  query: row.query,
  shared: row.shared,
  owner: { kind: row.owner_kind, id: row.owner_id, name: row.owner_name },
  mine: isOwner(principal, row),
  created_at: row.created_at.toISOString(),
});
