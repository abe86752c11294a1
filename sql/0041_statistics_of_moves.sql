-- The statistics pre-aggregate keeps the instance a moved CI left (sql/0039) as a dimension of its
-- own, so that the statistics and totals of a reader who may not see that instance leave the
-- move's record out, as every list of records does. Records of no move have it null, so existing
-- rows keep their meaning and stay where they are.
alter table change_stats_buckets add column moved_from_scope_id text;
alter table change_stats_days add column moved_from_scope_id text;

drop index change_stats_buckets_dimensions;
create unique index change_stats_buckets_dimensions on change_stats_buckets
  (tenant_id, bucket, source_id, scope_id, change_type, ci_type, moved_from_scope_id) nulls not distinct;
alter table change_stats_days drop constraint change_stats_days_tenant_id_day_source_id_scope_id_change_t_key;
create unique index change_stats_days_dimensions on change_stats_days
  (tenant_id, day, source_id, scope_id, change_type, ci_type, moved_from_scope_id) nulls not distinct;

-- a scoped reader's sums stay index-only (sql/0032) with the new dimension in them
drop index change_stats_buckets_by_instance;
create index change_stats_buckets_by_instance on change_stats_buckets (tenant_id, source_id, scope_id, bucket)
  include (change_type, ci_type, changes, moved_from_scope_id);
