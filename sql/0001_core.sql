-- Core schema: tenants, keys, collectors and sources, configuration items, change history,
-- relationships and the outbox. Every tenant-owned row carries tenant_id so that every query can be
-- bounded by the principal's tenant (and the tables can be distributed by it).

create extension if not exists pg_trgm;

create table tenants (
  id uuid primary key,
  slug text not null unique,
  name text not null,
  created_at timestamptz not null default now()
);

insert into tenants (id, slug, name) values ('00000000-0000-4000-8000-000000000001', 'default', 'Default tenant');

create table collectors (
  id bigint generated always as identity primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  collector_type text not null,
  status text not null default 'active',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name, collector_type)
);

create table sources (
  id bigint generated always as identity primary key,
  tenant_id uuid not null references tenants (id),
  collector_id bigint not null references collectors (id),
  name text not null,
  endpoint text,
  status text not null default 'enabled',
  config jsonb not null default '{}',
  schedule_config jsonb not null default '{"enabled": false, "interval_minutes": 60}',
  health_status jsonb,
  last_collection timestamptz,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index sources_live_name on sources (tenant_id, name) where deleted_at is null;
create index sources_collector on sources (collector_id);

create table api_keys (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  tier text not null check (tier in ('adm', 'svc', 'ro', 'usr')),
  -- keyed hash (HMAC-SHA256) of the whole key; the key itself is never stored
  key_hash bytea not null unique,
  -- the key's last characters, so people can tell their keys apart in listings
  key_hint text not null,
  permissions text[] not null default '{}',
  user_id uuid,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
);
create index api_keys_tenant on api_keys (tenant_id, created_at);

-- A null source_id means every source (full access); a null scope_id every instance of the source.
create table api_key_scopes (
  id bigint generated always as identity primary key,
  api_key_id uuid not null references api_keys (id) on delete cascade,
  source_id bigint references sources (id),
  scope_id text,
  check (source_id is not null or scope_id is null),
  unique nulls not distinct (api_key_id, source_id, scope_id)
);

create table configuration_items (
  ci_id uuid primary key,
  tenant_id uuid not null references tenants (id),
  source_id bigint not null references sources (id),
  -- the instance inside the source (a cluster, a Prometheus server ...) that data scopes name
  scope_id text,
  external_id text not null,
  ci_type text not null,
  name text not null,
  namespace text,
  status text not null default 'active' check (status in ('active', 'inactive', 'archived')),
  status_updated_at timestamptz,
  raw_data jsonb not null default '{}',
  type_data jsonb not null default '{}',
  -- digest of the collected content without volatile fields: unchanged objects are not rewritten
  content_hash bytea not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (tenant_id, source_id, external_id)
);
-- list orders (status first: the default list shows one status), each with ci_id as tiebreaker
create index ci_by_created on configuration_items (tenant_id, status, created_at, ci_id);
create index ci_by_updated on configuration_items (tenant_id, status, updated_at, ci_id);
create index ci_by_name on configuration_items (tenant_id, status, name, ci_id);
create index ci_by_type on configuration_items (tenant_id, ci_type, status);
create index ci_by_namespace on configuration_items (tenant_id, namespace, status);
create index ci_by_scope on configuration_items (tenant_id, source_id, scope_id);
create index ci_name_trgm on configuration_items using gin (name gin_trgm_ops);
create index ci_raw_data on configuration_items using gin (raw_data jsonb_path_ops);
-- lifecycle sweeps: inactive and archived rows by the time of their last status move
create index ci_status_moves on configuration_items (status, status_updated_at) where status <> 'active';

-- last_seen is written on every collection of every object; keeping it off the wide row means an
-- unchanged re-collection rewrites a narrow row instead of the CI and its jsonb.
create table ci_last_seen (
  ci_id uuid primary key references configuration_items (ci_id) on delete cascade,
  tenant_id uuid not null,
  last_seen timestamptz not null
);
create index ci_last_seen_at on ci_last_seen (last_seen);
create index ci_last_seen_tenant on ci_last_seen (tenant_id, last_seen);

create function cinv_change_document(name text, namespace text, fields text[]) returns tsvector
  language sql immutable parallel safe
  as $$ select to_tsvector('simple'::regconfig,
    coalesce(name, '') || ' ' || coalesce(namespace, '') || ' ' || coalesce(array_to_string(fields, ' '), '')) $$;

-- No foreign key to configuration_items: history outlives a permanently removed CI. source_id and
-- scope_id are copied so that data scopes apply to history without the CI.
create table change_records (
  id bigint generated always as identity primary key,
  tenant_id uuid not null references tenants (id),
  ci_id uuid not null,
  source_id bigint,
  scope_id text,
  ci_name text not null,
  ci_namespace text,
  ci_type text not null,
  change_type text not null check (change_type in ('CREATED', 'UPDATED', 'DELETED')),
  changed_at timestamptz not null,
  changes jsonb not null default '[]',
  changed_fields text[] not null default '{}',
  search_vector tsvector generated always as (cinv_change_document(ci_name, ci_namespace, changed_fields)) stored
);
create index changes_by_time on change_records (tenant_id, changed_at, id);
create index changes_by_ci on change_records (tenant_id, ci_id, changed_at, id);
create index changes_by_type on change_records (tenant_id, ci_type, changed_at);
create index changes_by_kind on change_records (tenant_id, change_type, changed_at);
create index changes_fields on change_records using gin (changed_fields);
create index changes_search on change_records using gin (search_vector);

-- No foreign keys to the CIs either: a relationship row may outlive its neighbour.
create table relationships (
  id bigint generated always as identity primary key,
  tenant_id uuid not null references tenants (id),
  source_id bigint,
  from_ci_id uuid not null,
  to_ci_id uuid not null,
  relationship_type text not null,
  created_at timestamptz not null,
  last_seen timestamptz not null,
  unique (tenant_id, from_ci_id, to_ci_id, relationship_type)
);
create index relationships_incoming on relationships (tenant_id, to_ci_id, relationship_type);

-- Written in the transaction of every change record; consumed by the search indexer.
create table outbox (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  topic text not null,
  aggregate_id text not null,
  payload jsonb not null,
  created_at timestamptz not null default now(),
  attempts integer not null default 0,
  available_at timestamptz not null default now(),
  last_error text
);
create index outbox_ready on outbox (available_at, id);
create index outbox_age on outbox (created_at);
