-- The hourly statistics buckets and the hourly distinct-CI figures are partitioned by month too
-- (src/db/partitions.ts keeps their months like those of change records): retention drops their
-- expired months whole. They are a small fraction of the history, so their rows move here, in the
-- migration's transaction.

create table change_stats_buckets_next (
  id bigint generated always as identity,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  bucket timestamptz not null,
  change_type text not null,
  ci_type text not null,
  changes bigint not null,
  constraint change_stats_buckets_next_pkey primary key (id, bucket)
) partition by range (bucket);
create unique index change_stats_buckets_dimensions_next on change_stats_buckets_next
  (tenant_id, bucket, source_id, scope_id, change_type, ci_type) nulls not distinct;
create table change_stats_buckets_default partition of change_stats_buckets_next default;

create table change_stats_affected_next (
  id bigint generated always as identity,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  bucket timestamptz not null,
  cis bigint not null,
  constraint change_stats_affected_next_pkey primary key (id, bucket)
) partition by range (bucket);
create unique index change_stats_affected_dimensions_next on change_stats_affected_next
  (tenant_id, bucket, source_id, scope_id) nulls not distinct;
create table change_stats_affected_default partition of change_stats_affected_next default;

do $$
declare
  t text;
  m timestamp;
begin
  foreach t in array array['change_stats_buckets', 'change_stats_affected'] loop
    -- months in UTC whatever the session's time zone: bounds computed on timestamps without one
    for m in execute format('select distinct date_trunc(''month'', bucket at time zone ''UTC'') from %I', t) loop
      execute format('create table %I partition of %I for values from (%L) to (%L)',
                     t || '_y' || to_char(m, 'YYYY"m"MM'), t || '_next', m::text || '+00', (m + interval '1 month')::text || '+00');
    end loop;
    execute format('insert into %I overriding system value select * from %I', t || '_next', t);
    perform cinv_swap_partitioned(t);
    execute format('drop table %I', t || '_legacy');
  end loop;
end $$;
