import type { Queryable } from '../../platform/db/database.js';

export interface Owner {
  userId: string | null;
  apiKeyId: string | null;
}

export interface SavedViewRow {
  id: string;
  name: string;
  view: 'inventory' | 'changes' | 'stats' | 'query';
  query: string;
  shared: boolean;
  owner_kind: 'user' | 'api_key';
  owner_id: string;
  owner_name: string;
  created_at: Date;
}

const COLUMNS = (sql: Queryable) => sql`
  v.id, v.name, v.view, v.query, v.shared, v.created_at,
  case when v.user_id is not null then 'user' else 'api_key' end as owner_kind,
  coalesce(v.user_id, v.api_key_id)::text as owner_id,
  coalesce(u.name, k.name, '') as owner_name`;

const OWNED_BY = (sql: Queryable, owner: Owner) =>
  owner.userId ? sql`v.user_id = ${owner.userId}` : sql`v.api_key_id = ${owner.apiKeyId}`;

/** The owner's views and the tenant's shared ones, by view and name. */
export function listSavedViews(
  sql: Queryable,
  tenantId: string,
  owner: Owner,
  view: string | undefined,
): Promise<SavedViewRow[]> {
  return sql<SavedViewRow[]>`
    select ${COLUMNS(sql)}
    from saved_views v left join users u on u.id = v.user_id left join api_keys k on k.id = v.api_key_id
    where v.tenant_id = ${tenantId} and (v.shared or ${OWNED_BY(sql, owner)})
      ${view === undefined ? sql`` : sql`and v.view = ${view}`}
    order by v.view, lower(v.name), v.id
    limit 1000`;
}

export function findSavedView(sql: Queryable, tenantId: string, id: string): Promise<SavedViewRow | undefined> {
  return sql<SavedViewRow[]>`
    select ${COLUMNS(sql)}
    from saved_views v left join users u on u.id = v.user_id left join api_keys k on k.id = v.api_key_id
    where v.tenant_id = ${tenantId} and v.id = ${id}`.then((rows) => rows[0]);
}

/** Locks the owner's views for the transaction and counts them, so that two saves cannot both take the last place. */
export async function lockAndCountOwned(sql: Queryable, tenantId: string, owner: Owner): Promise<number> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`saved-views:${owner.userId ?? owner.apiKeyId}`}, 0))`;
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from saved_views v where v.tenant_id = ${tenantId} and ${OWNED_BY(sql, owner)}`;
  return row?.n ?? 0;
}

/** Inserts a view; undefined when the owner has a view of that name already. */
export async function insertSavedView(
  sql: Queryable,
  tenantId: string,
  owner: Owner,
  view: { id: string; name: string; view: string; query: string; shared: boolean; createdAt: Date },
): Promise<boolean> {
  const rows = await sql`
    insert into saved_views (id, tenant_id, user_id, api_key_id, name, view, query, shared, created_at)
    values (${view.id}, ${tenantId}, ${owner.userId}, ${owner.apiKeyId}, ${view.name}, ${view.view}, ${view.query}, ${view.shared}, ${view.createdAt})
    on conflict do nothing
    returning 1`;
  return rows.length > 0;
}

export async function deleteSavedView(sql: Queryable, tenantId: string, id: string): Promise<void> {
  await sql`delete from saved_views where tenant_id = ${tenantId} and id = ${id}`;
}
