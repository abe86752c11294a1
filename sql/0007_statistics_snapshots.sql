-- The default statistics window of each tenant, as an unrestricted principal sees it, computed by
-- the refresh that brought the pre-aggregate up to date: reading it costs one row, however many
-- instances, CI types and hours the window spans. Data-scoped principals are computed from the
-- per-instance buckets instead.
create table change_stats_snapshots (
  tenant_id uuid primary key,
  window_start timestamptz not null,
  window_end timestamptz not null,
  -- {series: [[bucket_start, change_type, count]], top_ci_types: [[ci_type, count]], affected_cis}
  figures jsonb not null
);
