-- The CI counts gain the namespace: a list filtered by namespace (with or without type and status,
-- the filters people combine most) gets its exact total from the counts instead of counting the
-- CIs under CINV_COUNT_TIMEOUT on every first page. A key is now (tenant, status, type, source,
-- instance, namespace): a few hundred rows per instance and type at most, still read whole.

-- writers wait while the counts are rebuilt, so that no delta is lost between the recount and the
-- new trigger functions (the triggers of sql/0008 call them by name and stay as they are)
lock table configuration_items in share mode;

truncate ci_count_deltas, ci_counts;
alter table ci_count_deltas add column namespace text;
alter table ci_counts add column namespace text;
alter table ci_counts drop constraint ci_counts_tenant_id_status_ci_type_source_id_scope_id_key;
alter table ci_counts add constraint ci_counts_key unique nulls not distinct (tenant_id, status, ci_type, source_id, scope_id, namespace);

create or replace function cinv_count_inserted() returns trigger language plpgsql as $$
begin
  insert into ci_count_deltas (tenant_id, source_id, scope_id, status, ci_type, namespace, delta)
  select tenant_id, source_id, scope_id, status, ci_type, namespace, count(*) from inserted group by 1, 2, 3, 4, 5, 6;
  return null;
end $$;

create or replace function cinv_count_deleted() returns trigger language plpgsql as $$
begin
  insert into ci_count_deltas (tenant_id, source_id, scope_id, status, ci_type, namespace, delta)
  select tenant_id, source_id, scope_id, status, ci_type, namespace, -count(*) from removed group by 1, 2, 3, 4, 5, 6;
  return null;
end $$;

-- An update moves a CI between keys only when its status, type, source, instance or namespace
-- changed; rewrites of the same key cancel out and leave no delta.
create or replace function cinv_count_updated() returns trigger language plpgsql as $$
begin
  insert into ci_count_deltas (tenant_id, source_id, scope_id, status, ci_type, namespace, delta)
  select tenant_id, source_id, scope_id, status, ci_type, namespace, sum(delta) from (
    select tenant_id, source_id, scope_id, status, ci_type, namespace, -1 as delta from before_update
    union all
    select tenant_id, source_id, scope_id, status, ci_type, namespace, 1 from after_update
  ) moves
  group by 1, 2, 3, 4, 5, 6 having sum(delta) <> 0;
  return null;
end $$;

insert into ci_counts (tenant_id, source_id, scope_id, status, ci_type, namespace, cis)
select tenant_id, source_id, scope_id, status, ci_type, namespace, count(*) from configuration_items group by 1, 2, 3, 4, 5, 6;
