-- The statistics pre-aggregate by UTC day as well as by hour: a total over a long window (the
-- change list's, without a time bound: the whole history) reads one row per day and dimension for
-- its whole days, and hourly rows only for the hours at its edges. Each day holds exactly the sum of
-- its hourly buckets: the refresh adds to both, retention removes from both.
create table change_stats_days (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  day timestamptz not null,
  change_type text not null,
  ci_type text not null,
  changes bigint not null,
  unique nulls not distinct (tenant_id, day, source_id, scope_id, change_type, ci_type)
);

insert into change_stats_days (tenant_id, source_id, scope_id, day, change_type, ci_type, changes)
select tenant_id, source_id, scope_id, date_trunc('day', bucket, 'UTC'), change_type, ci_type, sum(changes)
from change_stats_buckets group by 1, 2, 3, 4, 5, 6;
