-- Change records and audit events are partitioned by month of their time (changed_at,
-- occurred_at): retention drops whole expired months instead of deleting row by row, and every
-- read bounded in time touches only the months it covers. Monthly partitions are made ahead by the
-- scheduled sweep (src/history/partitions.ts); a default partition takes what falls outside them,
-- so an insert never fails, and the sweep reports and moves what it finds there.
--
-- The partitioned tables are built beside the current ones as <table>_next. Where the current table
-- is empty (a new installation) they replace it here. Otherwise a trigger copies every write of the
-- current table into the new one, and `cinv migrate` moves the existing rows over in batches while
-- the service keeps serving from the current table, then swaps the two and compares count and
-- checksum (src/history/partition-migration.ts).

create table change_records_next (
  id bigint generated always as identity,
  tenant_id uuid not null constraint change_records_tenant_id_fkey references tenants (id),
  ci_id uuid not null,
  source_id bigint,
  scope_id text,
  ci_name text not null,
  ci_namespace text,
  ci_type text not null,
  change_type text not null,
  changed_at timestamptz not null,
  changes jsonb not null default '[]',
  changed_fields text[] not null default '{}',
  search_vector tsvector,
  constraint change_records_change_type_check check (change_type in ('CREATED', 'UPDATED', 'DELETED')),
  constraint change_records_next_pkey primary key (id, changed_at)
) partition by range (changed_at);
create table change_records_default partition of change_records_next default;
create index changes_by_time_next on change_records_next (tenant_id, changed_at, id);
create index changes_by_ci_next on change_records_next (tenant_id, ci_id, changed_at, id);
create index changes_by_type_next on change_records_next (tenant_id, ci_type, changed_at);
create index changes_by_kind_next on change_records_next (tenant_id, change_type, changed_at);
create index changes_by_name_id_next on change_records_next (tenant_id, ci_name, id);
create index changes_by_type_id_next on change_records_next (tenant_id, ci_type, id);
create index changes_by_kind_id_next on change_records_next (tenant_id, change_type, id);
create index changes_fields_next on change_records_next using gin (changed_fields);
create index changes_search_next on change_records_next using gin (search_vector);
create index changes_without_document_next on change_records_next (id) where search_vector is null;
create index changes_stats_next on change_records_next (tenant_id, changed_at)
  include (ci_id, change_type, ci_type, source_id, scope_id) where changes <> '[]'::jsonb;

create table audit_events_next (
  id bigint generated always as identity,
  tenant_id uuid not null constraint audit_events_tenant_id_fkey references tenants (id),
  occurred_at timestamptz not null,
  event_type text not null,
  outcome text not null,
  actor_kind text not null,
  actor_id text,
  actor_name text,
  target_type text,
  target_id text,
  target_name text,
  client_address text,
  user_agent text,
  request_id text,
  details jsonb not null default '{}',
  constraint audit_events_outcome_check check (outcome in ('success', 'failure')),
  constraint audit_events_next_pkey primary key (id, occurred_at)
) partition by range (occurred_at);
create table audit_events_default partition of audit_events_next default;
create index audit_by_time_next on audit_events_next (tenant_id, occurred_at, id);
create index audit_by_type_next on audit_events_next (tenant_id, event_type, occurred_at, id);
create index audit_by_actor_next on audit_events_next (tenant_id, actor_id, occurred_at, id);
create index audit_age_next on audit_events_next (occurred_at);

-- One row per table being moved into partitions: how far the copy got (by id), for resuming.
create table partition_migrations (
  table_name text primary key,
  status text not null check (status in ('copying', 'swapped', 'completed', 'failed')),
  last_id bigint not null default 0,
  copied bigint not null default 0,
  -- the highest id of the current table when the copy began: rows above it reach the new table by the trigger
  upto_id bigint,
  started_at timestamptz not null default now(),
  swapped_at timestamptz,
  finished_at timestamptz,
  legacy_rows bigint,
  checksum text,
  error text
);

-- Mirrors the writes of a table being migrated into its <table>_next, one statement at a time.
-- TG_ARGV[0] is the time column, which with id identifies a row of the partitioned table.
create function cinv_mirror_into_next() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    execute format('delete from %I n using removed r where n.id = r.id and n.%I = r.%I', tg_table_name || '_next', tg_argv[0], tg_argv[0]);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    execute format('insert into %I overriding system value select * from added on conflict do nothing', tg_table_name || '_next');
  end if;
  return null;
end $$;

-- Puts <table>_next in the place of <table>: the names of the table, its indexes, its key and its
-- identity sequence move over, the sequence going on from the current one's; the current table
-- stays as <table>_legacy until it has been compared.
create function cinv_swap_partitioned(name text) returns void language plpgsql as $$
declare
  ix record;
  seq_old text := pg_get_serial_sequence(quote_ident(name), 'id');
  seq_new text := pg_get_serial_sequence(quote_ident(name || '_next'), 'id');
  last bigint;
begin
  execute format('lock table %I in exclusive mode', name);
  execute format('drop trigger if exists cinv_mirror_insert on %I', name);
  execute format('drop trigger if exists cinv_mirror_update on %I', name);
  execute format('drop trigger if exists cinv_mirror_delete on %I', name);
  execute format('select last_value from %s', seq_old) into last;
  execute format('select setval(%L, %s)', seq_new, greatest(last, 1));
  for ix in select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid
            where i.indrelid = name::regclass loop
    -- names are cut at 63 bytes: the suffix must survive the cut
    execute format('alter index %I rename to %I', ix.relname, left(ix.relname, 56) || '_legacy');
  end loop;
  execute format('alter table %I rename to %I', name, name || '_legacy');
  execute format('alter sequence %s rename to %I', seq_old, name || '_legacy_id_seq');
  for ix in select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid
            where i.indrelid = (name || '_next')::regclass loop
    execute format('alter index %I rename to %I', ix.relname, regexp_replace(replace(ix.relname, '_next_pkey', '_pkey'), '_next$', ''));
  end loop;
  execute format('alter table %I rename to %I', name || '_next', name);
  execute format('alter sequence %s rename to %I', seq_new, name || '_id_seq');
end $$;

-- A new installation, or one with nothing to move: the partitioned tables take over at once.
-- Otherwise every write from now on is mirrored, and `cinv migrate` moves what is already there.
do $$
declare
  t record;
  has_rows boolean;
begin
  for t in select * from (values ('change_records', 'changed_at'), ('audit_events', 'occurred_at')) as v(name, time_column) loop
    if exists (select 1 from pg_class where relname = t.name || '_legacy') then
      raise exception '% is left from an earlier migration: compare and drop it first', t.name || '_legacy';
    end if;
    execute format('lock table %I in exclusive mode', t.name);
    execute format('select exists (select 1 from %I)', t.name) into has_rows;
    if not has_rows then
      perform cinv_swap_partitioned(t.name);
      execute format('drop table %I', t.name || '_legacy');
    else
      -- a trigger with transition tables fires on one kind of event only
      execute format('create trigger cinv_mirror_insert after insert on %I referencing new table as added for each statement execute function cinv_mirror_into_next(%L)', t.name, t.time_column);
      execute format('create trigger cinv_mirror_update after update on %I referencing old table as removed new table as added for each statement execute function cinv_mirror_into_next(%L)', t.name, t.time_column);
      execute format('create trigger cinv_mirror_delete after delete on %I referencing old table as removed for each statement execute function cinv_mirror_into_next(%L)', t.name, t.time_column);
      insert into partition_migrations (table_name, status) values (t.name, 'copying');
    end if;
  end loop;
end $$;

-- Statistics refreshes find each queued record by id and time, so that only its month is read.
alter table change_stats_queue add column changed_at timestamptz;
update change_stats_queue q set changed_at = cr.changed_at from change_records cr where cr.id = q.change_id;
delete from change_stats_queue where changed_at is null;
alter table change_stats_queue alter column changed_at set not null;
