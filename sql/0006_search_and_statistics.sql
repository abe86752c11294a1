-- Change search over names, namespaces, types, field paths and old/new values, the statistics
-- pre-aggregate, and the bookkeeping of the outbox indexer and of search reindexing.

-- The search document is built by the writer (src/search/document.ts: the CI name, namespace and
-- type, changed field paths, and the scalar leaves of old and new values, as weighted lexemes) and
-- stored with each record. Records written before this migration get theirs from a backfill job,
-- which finds them by the null document.
drop index changes_search;
alter table change_records drop column search_vector;
drop function cinv_change_document(text, text, text[]);
alter table change_records add column search_vector tsvector;
create index changes_search on change_records using gin (search_vector);
create index changes_without_document on change_records (id) where search_vector is null;

-- Statistics, pre-aggregated per tenant, source, instance, hour, change type and CI type, so that
-- a data-scoped principal's figures are sums over the instances it may see. Kept up to date from
-- change_stats_queue, which every change record enters in its own transaction: a refresh takes what
-- is queued (whatever order the writing transactions committed in) and applies it exactly once.
create table change_stats_queue (
  change_id bigint primary key
);
insert into change_stats_queue (change_id) select id from change_records;

create table change_stats_buckets (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  bucket timestamptz not null,
  change_type text not null,
  ci_type text not null,
  changes bigint not null,
  unique nulls not distinct (tenant_id, bucket, source_id, scope_id, change_type, ci_type)
);

-- Distinct CIs: each CI's latest hour with a change (per instance), and per hour how many CIs have
-- their latest change in it. The CIs changed since a moment are then a sum over the hours after it.
create table change_stats_ci_last (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  ci_id uuid not null,
  last_bucket timestamptz not null,
  unique nulls not distinct (tenant_id, ci_id, source_id, scope_id)
);

create table change_stats_affected (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  bucket timestamptz not null,
  cis bigint not null,
  unique nulls not distinct (tenant_id, bucket, source_id, scope_id)
);

-- When the pre-aggregate was last brought up to date: the end of the window it covers.
create table change_stats_state (
  id integer primary key check (id = 1),
  refreshed_at timestamptz not null
);
insert into change_stats_state (id, refreshed_at) values (1, '-infinity');

-- Explicit statistics windows read change records by time; this index answers them without
-- visiting the table (once vacuum has marked the pages all-visible).
create index changes_stats on change_records (tenant_id, changed_at)
  include (ci_id, change_type, ci_type, source_id, scope_id) where changes <> '[]'::jsonb;

-- Outbox consumers lease rows by moving available_at forward; rows that fail for good are parked.
alter table outbox add column parked_at timestamptz;
create index outbox_pending on outbox (topic, available_at, id) where parked_at is null;
create index outbox_parked on outbox (topic, id) where parked_at is not null;

-- A search reindex in progress or done: the target index, how far it got, for --resume.
create table search_reindex (
  id bigint generated always as identity primary key,
  alias text not null,
  index_name text not null,
  status text not null check (status in ('running', 'completed', 'failed')),
  started_at timestamptz not null default now(),
  finished_at timestamptz,
  last_change_id bigint not null default 0,
  indexed bigint not null default 0,
  total bigint not null default 0
);
create unique index search_reindex_running on search_reindex (alias) where status = 'running';
