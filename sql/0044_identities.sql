-- Identities: observations (CIs) of several sources that describe one real thing, linked to one
-- identity by identification rules (src/inventory/identities/). The identity worker keeps these
-- tables in line with the change feed; nothing here is written on the inventory's write path.
create table identities (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  kind text not null,
  -- the reconciled host name (or the first observation's name): what lists show and sort by
  name text not null,
  observation_count integer not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  -- no observation links it any more (its observations went, or joined another identity); kept
  -- so that the identity at a moment before still reads
  retired_at timestamptz
);
create index identities_by_name on identities (tenant_id, name, id) where retired_at is null;
create index identities_by_updated on identities (tenant_id, updated_at, id) where retired_at is null;

-- one CI's observation of one kind of thing: its keys, and the fields it reports with since when
create table identity_observations (
  ci_id uuid not null references configuration_items (ci_id) on delete cascade,
  kind text not null,
  tenant_id uuid not null,
  identity_id uuid not null references identities (id),
  role text not null check (role in ('self', 'runs-on')),
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  keys jsonb not null,
  fields jsonb not null,
  linked_at timestamptz not null,
  primary key (ci_id, kind)
);
create index identity_observations_of on identity_observations (identity_id);

-- the identifying values, one row each, to find the observations that share one
create table identity_keys (
  tenant_id uuid not null,
  kind text not null,
  key text not null,
  value text not null,
  ci_id uuid not null,
  primary key (tenant_id, kind, key, value, ci_id)
);
create index identity_keys_of on identity_keys (ci_id);

-- which identity each observation linked, from when until when: the identities at a moment
create table identity_links (
  tenant_id uuid not null,
  ci_id uuid not null,
  kind text not null,
  identity_id uuid not null,
  linked_from timestamptz not null,
  linked_until timestamptz
);
create index identity_links_of on identity_links (identity_id, linked_from);
create index identity_links_open on identity_links (ci_id, kind) where linked_until is null;

-- a rule that would have joined what something keeps apart: a review item for a person
create table identity_conflicts (
  id uuid primary key,
  tenant_id uuid not null,
  kind text not null,
  rule text not null,
  -- the groups as sorted JSON: the same question raised again is the same open conflict
  fingerprint text not null,
  shared_values text[] not null,
  groups jsonb not null,
  ci_ids uuid[] not null,
  status text not null check (status in ('open', 'settled', 'gone')),
  raised_at timestamptz not null,
  closed_at timestamptz,
  decision_id uuid
);
create unique index identity_conflicts_open on identity_conflicts (tenant_id, fingerprint) where status = 'open';
create index identity_conflicts_list on identity_conflicts (tenant_id, status, raised_at, id);
create index identity_conflicts_of on identity_conflicts using gin (ci_ids) where status = 'open';

-- people's decisions: merge, keep apart, pin a field's source; undone, not deleted
create table identity_decisions (
  id uuid primary key,
  tenant_id uuid not null,
  kind text not null,
  action text not null check (action in ('merge', 'keep_apart', 'pin')),
  ci_ids uuid[] not null,
  field text,
  source_id bigint,
  conflict_id uuid,
  reason text,
  made_by jsonb not null,
  made_at timestamptz not null,
  undone_at timestamptz,
  undone_by jsonb
);
create index identity_decisions_list on identity_decisions (tenant_id, made_at, id);
create index identity_decisions_live on identity_decisions using gin (ci_ids) where undone_at is null;

-- a tenant's own identification and precedence rules, per kind; the shipped ones otherwise
create table identity_settings (
  tenant_id uuid primary key references tenants (id),
  rules jsonb not null,
  updated_at timestamptz not null
);

-- where the identity worker is in the change feed; no row: it has not backfilled yet
create table identity_progress (
  singleton boolean primary key default true check (singleton),
  position bigint not null,
  record_id bigint not null
);
