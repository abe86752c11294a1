-- A saved view is a name for a view of the web interface and its URL state (filters, sort, window).
-- It holds no data: whoever opens it reads what the query finds under their own rights, so a view
-- shared with the tenant shows each person what they may see. Its owner is a user or an API key
-- (a session acts as its key), exactly one of them.
create table saved_views (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  user_id uuid references users (id) on delete cascade,
  api_key_id uuid references api_keys (id) on delete cascade,
  name text not null,
  view text not null check (view in ('inventory', 'changes', 'stats')),
  query text not null,
  shared boolean not null default false,
  created_at timestamptz not null,
  check (num_nonnulls(user_id, api_key_id) = 1)
);
create unique index saved_views_name on saved_views (tenant_id, coalesce(user_id, api_key_id), view, name);
create index saved_views_shared on saved_views (tenant_id, view, name) where shared;
