-- The statistics of a data-scoped key sum the buckets of the instances it may see. The buckets'
-- dimensions index leads with the tenant and the hour, so such a read walked every bucket of the
-- tenant's window and kept the instance's: at 5 000 000 change records in seven instances, the
-- default window of one instance read 141 809 bucket rows for 20 222 (94 ms), and its affected CIs
-- every row for 2 881 (93 ms). Led by the instance and covering what the reads sum, these give the
-- same answers from the instance's rows alone (36 ms and 2.4 ms), without visiting the table.

create index change_stats_buckets_by_instance on change_stats_buckets (tenant_id, source_id, scope_id, bucket) include (change_type, ci_type, changes);
create index change_stats_affected_by_instance on change_stats_affected (tenant_id, source_id, scope_id, bucket) include (cis);
