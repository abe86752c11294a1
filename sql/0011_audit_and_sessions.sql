-- The security audit log: who did what to access, when, from where, and whether it was allowed.
create table audit_events (
  id bigint generated always as identity primary key,
  tenant_id uuid not null references tenants (id),
  occurred_at timestamptz not null,
  event_type text not null,
  outcome text not null check (outcome in ('success', 'failure')),
  actor_kind text not null,
  actor_id text,
  actor_name text,
  target_type text,
  target_id text,
  target_name text,
  client_address text,
  user_agent text,
  request_id text,
  details jsonb not null default '{}'
);
-- newest first, alone or narrowed by one of the filters a person starts from
create index audit_by_time on audit_events (tenant_id, occurred_at, id);
create index audit_by_type on audit_events (tenant_id, event_type, occurred_at, id);
create index audit_by_actor on audit_events (tenant_id, actor_id, occurred_at, id);
-- retention trims the oldest rows across tenants
create index audit_age on audit_events (occurred_at);

-- Single sign-on sessions. The cookie holds a random identifier; only its keyed hash is stored, so
-- a copy of this table opens no session. Logout and deactivation delete the row: the next request
-- with the cookie is refused, on every replica.
create table sessions (
  id_hash bytea primary key,
  tenant_id uuid not null references tenants (id),
  user_id uuid not null references users (id) on delete cascade,
  created_at timestamptz not null,
  expires_at timestamptz not null
);
create index sessions_user on sessions (user_id);
create index sessions_expiry on sessions (expires_at);

-- Memberships the identity provider's groups claim gave a user (CINV_OIDC_GROUPS_CLAIM): each
-- sign-in adds those of its groups and removes those of groups it no longer names. Memberships an
-- admin added stay as they are.
alter table team_members add column via_groups boolean not null default false;
