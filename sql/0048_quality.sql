-- Data quality (src/inventory/quality/, docs/quality.md): what each active CI lacks, kept per CI
-- by the quality worker, and the counters the scores are read from. Nothing here computes a
-- score from the inventory: triggers on the tables a measure depends on queue the CIs whose
-- state may have moved, the worker rechecks them, and statement triggers on its rows keep the
-- counters (deltas folded by the sweep, as ci_counts are).

-- CIs to check again: written by triggers whoever writes (reconcile, sweep, DELETE, the identity
-- worker), drained by the quality worker. A CI queued twice is checked once.
create table quality_queue (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  ci_id uuid not null
);
-- whether a tenant's figures are still catching up (`pending`), without reading others' rows
create index quality_queue_tenant on quality_queue (tenant_id);

-- One row per active CI: what it fails, and why. Rows of CIs that left the active inventory go.
create table ci_quality (
  ci_id uuid primary key references configuration_items (ci_id) on delete cascade,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  -- the value at the tenant's owner path (raw_data.metadata.labels.team by default), or null
  owner text,
  -- required paths missing, recommended paths missing, and the weighted completeness (0..1)
  missing text[] not null default '{}',
  missing_recommended text[] not null default '{}',
  completeness double precision not null,
  -- why the CI is an orphan (a required relationship missing, a reference that did not resolve,
  -- a relationship to a CI that is gone), or null
  orphan text,
  -- why the CI duplicates another (an open identity conflict, a second observation of one thing
  -- by one source), or null
  duplicate text,
  -- since when the CI is stale (last seen plus its type's threshold), or null
  stale_since timestamptz,
  -- when last seen, if not seen by its source's last successful list; null when it was
  unseen_since timestamptz,
  checked_at timestamptz not null
);
create index ci_quality_by_source on ci_quality (tenant_id, source_id, ci_id);
-- a type's or an owner's failures: their rows by id, when the failing rows of everyone are many more
create index ci_quality_by_type on ci_quality (tenant_id, ci_type, ci_id);
create index ci_quality_by_owner on ci_quality (tenant_id, owner, ci_id);
create index ci_quality_incomplete on ci_quality (tenant_id, ci_id) where missing <> '{}';
create index ci_quality_orphans on ci_quality (tenant_id, ci_id) where orphan is not null;
create index ci_quality_duplicates on ci_quality (tenant_id, ci_id) where duplicate is not null;
create index ci_quality_stale on ci_quality (tenant_id, ci_id) where stale_since is not null;
create index ci_quality_unseen on ci_quality (tenant_id, ci_id) where unseen_since is not null;

-- The counters, per tenant, source, instance, type and owner: deltas appended by statement
-- triggers on ci_quality (no row is contended), added into quality_counts by the sweep.
create table quality_count_deltas (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  owner text,
  cis bigint not null,
  incomplete bigint not null,
  completeness double precision not null,
  orphans bigint not null,
  duplicates bigint not null,
  stale bigint not null,
  unseen bigint not null
);
create index quality_count_deltas_tenant on quality_count_deltas (tenant_id);

create table quality_counts (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  owner text,
  cis bigint not null,
  incomplete bigint not null,
  completeness double precision not null,
  orphans bigint not null,
  duplicates bigint not null,
  stale bigint not null,
  unseen bigint not null,
  unique nulls not distinct (tenant_id, source_id, scope_id, ci_type, owner)
);

create function cinv_quality_inserted() returns trigger language plpgsql as $$
begin
  insert into quality_count_deltas (tenant_id, source_id, scope_id, ci_type, owner, cis, incomplete, completeness,
                                    orphans, duplicates, stale, unseen)
  select tenant_id, source_id, scope_id, ci_type, owner, count(*), count(*) filter (where missing <> '{}'),
         sum(completeness), count(orphan), count(duplicate), count(stale_since), count(unseen_since)
  from added_rows group by 1, 2, 3, 4, 5;
  return null;
end $$;

create function cinv_quality_deleted() returns trigger language plpgsql as $$
begin
  insert into quality_count_deltas (tenant_id, source_id, scope_id, ci_type, owner, cis, incomplete, completeness,
                                    orphans, duplicates, stale, unseen)
  select tenant_id, source_id, scope_id, ci_type, owner, -count(*), -count(*) filter (where missing <> '{}'),
         -sum(completeness), -count(orphan), -count(duplicate), -count(stale_since), -count(unseen_since)
  from removed_rows group by 1, 2, 3, 4, 5;
  return null;
end $$;

create function cinv_quality_updated() returns trigger language plpgsql as $$
begin
  insert into quality_count_deltas (tenant_id, source_id, scope_id, ci_type, owner, cis, incomplete, completeness,
                                    orphans, duplicates, stale, unseen)
  select tenant_id, source_id, scope_id, ci_type, owner, sum(sign), sum(sign * (missing <> '{}')::int),
         sum(sign * completeness), sum(sign * (orphan is not null)::int), sum(sign * (duplicate is not null)::int),
         sum(sign * (stale_since is not null)::int), sum(sign * (unseen_since is not null)::int)
  from (
    select -1 as sign, tenant_id, source_id, scope_id, ci_type, owner, missing, completeness, orphan, duplicate,
           stale_since, unseen_since from removed_rows
    union all
    select 1, tenant_id, source_id, scope_id, ci_type, owner, missing, completeness, orphan, duplicate,
           stale_since, unseen_since from added_rows
  ) moved
  group by 1, 2, 3, 4, 5
  having sum(sign) <> 0 or sum(sign * (missing <> '{}')::int) <> 0 or sum(sign * completeness) <> 0
      or sum(sign * (orphan is not null)::int) <> 0 or sum(sign * (duplicate is not null)::int) <> 0
      or sum(sign * (stale_since is not null)::int) <> 0 or sum(sign * (unseen_since is not null)::int) <> 0;
  return null;
end $$;

create trigger ci_quality_insert after insert on ci_quality
  referencing new table as added_rows for each statement execute function cinv_quality_inserted();
create trigger ci_quality_delete after delete on ci_quality
  referencing old table as removed_rows for each statement execute function cinv_quality_deleted();
create trigger ci_quality_update after update on ci_quality
  referencing old table as removed_rows new table as added_rows for each statement execute function cinv_quality_updated();

-- What queues a CI. A CI's own write queues it; a status change or a removal also queues the CIs
-- at the other end of its relationships (a relationship to a CI that is gone, a required one from it).
create function cinv_quality_ci_inserted() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id) select tenant_id, ci_id from inserted;
  return null;
end $$;

-- The CIs at the other end of a CI's relationships, either way, each found through an index: used
-- per CI whose status moved or that went, never joined whole (the planner knows nothing of a
-- transition table and would hash every relationship of the inventory for each statement).
create function cinv_quality_other_ends(tenant uuid, ci uuid) returns table (tenant_id uuid, ci_id uuid)
  language sql stable as $$
  select r.tenant_id, r.from_ci_id from relationships r where r.tenant_id = tenant and r.to_ci_id = ci
  union all
  select r.tenant_id, r.to_ci_id from relationships r where r.tenant_id = tenant and r.from_ci_id = ci
$$;

create function cinv_quality_ci_updated() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id)
  select a.tenant_id, a.ci_id from after_update a
  union all
  select ends.tenant_id, ends.ci_id
  from after_update a join before_update b on b.ci_id = a.ci_id
  cross join lateral cinv_quality_other_ends(a.tenant_id, a.ci_id) ends
  where a.status <> b.status;
  return null;
end $$;

create function cinv_quality_ci_deleted() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id)
  select ends.tenant_id, ends.ci_id from removed cross join lateral cinv_quality_other_ends(removed.tenant_id, removed.ci_id) ends;
  return null;
end $$;

create trigger ci_quality_queue_insert after insert on configuration_items
  referencing new table as inserted for each statement execute function cinv_quality_ci_inserted();
create trigger ci_quality_queue_update after update on configuration_items
  referencing old table as before_update new table as after_update for each statement execute function cinv_quality_ci_updated();
create trigger ci_quality_queue_delete after delete on configuration_items
  referencing old table as removed for each statement execute function cinv_quality_ci_deleted();

-- A relationship added or removed moves both ends (a required relationship out of one, into
-- the other; one to a CI that is gone); only inserts and deletes change which exist.
create function cinv_quality_relationships_moved() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id)
  select tenant_id, from_ci_id from moved union select tenant_id, to_ci_id from moved;
  return null;
end $$;

-- A reference waiting for its target moves only the CI that makes it.
create function cinv_quality_references_moved() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id) select distinct tenant_id, from_ci_id from moved;
  return null;
end $$;

create trigger relationships_quality_insert after insert on relationships
  referencing new table as moved for each statement execute function cinv_quality_relationships_moved();
create trigger relationships_quality_delete after delete on relationships
  referencing old table as moved for each statement execute function cinv_quality_relationships_moved();
create trigger pending_relationships_quality_insert after insert on pending_relationships
  referencing new table as moved for each statement execute function cinv_quality_references_moved();
create trigger pending_relationships_quality_delete after delete on pending_relationships
  referencing old table as moved for each statement execute function cinv_quality_references_moved();

-- Identities: an observation joining or leaving an identity moves every observation of it (a
-- second observation by one source makes both duplicates); a conflict moves the CIs it names.
create function cinv_quality_observations_moved() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id)
  select distinct o.tenant_id, o.ci_id from identity_observations o
  where o.identity_id in (select identity_id from moved)
  union
  select tenant_id, ci_id from moved;
  return null;
end $$;

create trigger identity_observations_quality_insert after insert on identity_observations
  referencing new table as moved for each statement execute function cinv_quality_observations_moved();
create trigger identity_observations_quality_delete after delete on identity_observations
  referencing old table as moved for each statement execute function cinv_quality_observations_moved();
create trigger identity_observations_quality_update_old after update on identity_observations
  referencing old table as moved for each statement execute function cinv_quality_observations_moved();
create trigger identity_observations_quality_update_new after update on identity_observations
  referencing new table as moved for each statement execute function cinv_quality_observations_moved();

create function cinv_quality_conflicts_moved() returns trigger language plpgsql as $$
begin
  insert into quality_queue (tenant_id, ci_id) select distinct tenant_id, unnest(ci_ids) from moved;
  return null;
end $$;

create trigger identity_conflicts_quality_insert after insert on identity_conflicts
  referencing new table as moved for each statement execute function cinv_quality_conflicts_moved();
create trigger identity_conflicts_quality_update after update on identity_conflicts
  referencing new table as moved for each statement execute function cinv_quality_conflicts_moved();

-- A tenant's settings (docs/quality.md): owner path, weights, thresholds, completeness paths,
-- required relationships; none: the shipped defaults.
create table quality_settings (
  tenant_id uuid primary key references tenants (id),
  settings jsonb not null,
  updated_at timestamptz not null
);

-- Administrators' rules: `applies_to` and `requires` are matches of the query language.
create table quality_rules (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  description text,
  applies_to text not null,
  requires text not null,
  created_by jsonb not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index quality_rules_name on quality_rules (tenant_id, lower(name));
create index quality_rules_list on quality_rules (tenant_id, created_at, id);

-- Each rule's verdict on each active CI it applies to.
create table ci_rule_results (
  rule_id uuid not null references quality_rules (id) on delete cascade,
  ci_id uuid not null references configuration_items (ci_id) on delete cascade,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  owner text,
  passed boolean not null,
  primary key (rule_id, ci_id)
);
create index ci_rule_results_of on ci_rule_results (ci_id);
create index ci_rule_results_failing on ci_rule_results (rule_id, ci_id) where not passed;

create table quality_rule_deltas (
  id bigint generated always as identity primary key,
  rule_id uuid not null,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  owner text,
  applies bigint not null,
  passes bigint not null
);
create index quality_rule_deltas_tenant on quality_rule_deltas (tenant_id);

create table quality_rule_counts (
  id bigint generated always as identity primary key,
  rule_id uuid not null references quality_rules (id) on delete cascade,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  owner text,
  applies bigint not null,
  passes bigint not null,
  unique nulls not distinct (rule_id, source_id, scope_id, ci_type, owner)
);
create index quality_rule_counts_tenant on quality_rule_counts (tenant_id);

create function cinv_rule_results_moved() returns trigger language plpgsql as $$
begin
  insert into quality_rule_deltas (rule_id, tenant_id, source_id, scope_id, ci_type, owner, applies, passes)
  select rule_id, tenant_id, source_id, scope_id, ci_type, owner, sum(sign), sum(sign * passed::int)
  from (
    select -1 as sign, rule_id, tenant_id, source_id, scope_id, ci_type, owner, passed from removed_rows
    union all
    select 1, rule_id, tenant_id, source_id, scope_id, ci_type, owner, passed from added_rows
  ) moved
  group by 1, 2, 3, 4, 5, 6
  having sum(sign) <> 0 or sum(sign * passed::int) <> 0;
  return null;
end $$;

create function cinv_rule_results_inserted() returns trigger language plpgsql as $$
begin
  insert into quality_rule_deltas (rule_id, tenant_id, source_id, scope_id, ci_type, owner, applies, passes)
  select rule_id, tenant_id, source_id, scope_id, ci_type, owner, count(*), count(*) filter (where passed)
  from added_rows group by 1, 2, 3, 4, 5, 6;
  return null;
end $$;

create function cinv_rule_results_deleted() returns trigger language plpgsql as $$
begin
  insert into quality_rule_deltas (rule_id, tenant_id, source_id, scope_id, ci_type, owner, applies, passes)
  select rule_id, tenant_id, source_id, scope_id, ci_type, owner, -count(*), -count(*) filter (where passed)
  from removed_rows group by 1, 2, 3, 4, 5, 6;
  return null;
end $$;

create trigger ci_rule_results_insert after insert on ci_rule_results
  referencing new table as added_rows for each statement execute function cinv_rule_results_inserted();
create trigger ci_rule_results_delete after delete on ci_rule_results
  referencing old table as removed_rows for each statement execute function cinv_rule_results_deleted();
create trigger ci_rule_results_update after update on ci_rule_results
  referencing old table as removed_rows new table as added_rows for each statement execute function cinv_rule_results_moved();

-- Where the worker is: a tenant's or a rule's walk over the stored CIs (after a change of the
-- settings, a new or edited rule, and the first start), by ci_id.
create table quality_walks (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  -- null: the whole check (settings); else the rule walked
  rule_id uuid,
  after_ci uuid not null,
  started_at timestamptz not null,
  unique nulls not distinct (tenant_id, rule_id)
);
insert into quality_walks (tenant_id, rule_id, after_ci, started_at)
select id, null, '00000000-0000-0000-0000-000000000000', now() from tenants;

-- The last successful list of each source (its start): a CI last seen before it was not seen by
-- it. The sweep flags those CIs (`flagged_for`: the list it last flagged them for).
create table quality_source_lists (
  source_id bigint primary key,
  tenant_id uuid not null,
  listed_at timestamptz not null,
  finished_at timestamptz not null,
  flagged_for timestamptz
);

-- The counters as they were at the end of each day (UTC), per source, instance and type: the
-- trend of 90 days is one read of these rows.
create table quality_daily (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  day date not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  cis bigint not null,
  incomplete bigint not null,
  completeness double precision not null,
  orphans bigint not null,
  duplicates bigint not null,
  stale bigint not null,
  unfresh bigint not null,
  rule_applies bigint not null,
  rule_passes bigint not null,
  unique nulls not distinct (tenant_id, day, source_id, scope_id, ci_type)
);

-- Subscriptions that also deliver data-quality alerts: a score (overall or a measure's, as the
-- owner sees them) falling below the tenant's alert_below, or back above it. What each was last
-- told, per measure: a crossing is sent once, and sent again until a receiver takes it.
alter table subscriptions add column quality_alerts boolean not null default false;
create table subscription_quality_states (
  subscription_id uuid not null references subscriptions (id) on delete cascade,
  measure text not null,
  below boolean not null,
  score double precision not null,
  told_at timestamptz not null,
  primary key (subscription_id, measure)
);
create index subscriptions_quality_alerts on subscriptions (id) where quality_alerts and enabled;
