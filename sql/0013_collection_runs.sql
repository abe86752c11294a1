-- Collection runs: what workers claim, run and report. A run is queued by the schedule or a
-- trigger, claimed by one worker with a lease it renews while it works (a worker that dies lets
-- its lease expire and another takes the run over), and ends succeeded, partial (some components
-- failed, the rest was collected), failed or cancelled.
create table collection_runs (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  collector_id bigint not null references collectors (id),
  source_id bigint not null references sources (id),
  status text not null check (status in ('queued', 'running', 'succeeded', 'partial', 'failed', 'cancelled')),
  trigger text not null check (trigger in ('schedule', 'manual')),
  queued_at timestamptz not null,
  started_at timestamptz,
  finished_at timestamptz,
  lease_owner text,
  lease_expires_at timestamptz,
  attempts integer not null default 0,
  counts jsonb,
  error text,
  -- hybrid runs: when the list ended and the watch began, and whether a trigger asked for a new list
  watching_since timestamptz,
  resync_requested boolean not null default false
);
-- one queued or running run per source: a source is never collected twice at once
create unique index collection_runs_active on collection_runs (source_id) where status in ('queued', 'running');
create index collection_runs_claimable on collection_runs (queued_at) where status in ('queued', 'running');
create index collection_runs_by_collector on collection_runs (collector_id, queued_at desc, id);
create index collection_runs_by_source on collection_runs (source_id, queued_at desc);

alter table sources add column consecutive_errors integer not null default 0;
-- when the schedule next wants the source collected (null: as soon as its schedule is enabled)
alter table sources add column next_run_at timestamptz;
create index sources_due on sources (next_run_at) where deleted_at is null and status = 'enabled';
