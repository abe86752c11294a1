-- When a month the partition upkeep deferred (its rows too many to move out of the default
-- partition within the statement timeout) is tried again. Kept in the database, so every process
-- on it (servers, sweeps, commands) follows one schedule, and a restart does not start it over.
create table partition_retries (
  partition_name text primary key,
  wait_ms bigint not null,
  next_try_at timestamptz not null
);
