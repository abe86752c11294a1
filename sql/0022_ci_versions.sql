-- What a CI was, in the columns a list filters and sorts by, over the time it was so: a list of
-- the past walks these through indexes as the list of the present walks configuration_items,
-- and takes back only the page's rows in full (cinv_ci_at). A new version starts when a CI is
-- created, renamed, moved, retyped or changes status; edits of raw_data alone start none.
create table ci_versions (
  ci_id uuid not null,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  ci_type text not null,
  name text not null,
  namespace text,
  status text not null,
  created_at timestamptz not null,
  valid_from timestamptz not null,
  valid_to timestamptz not null default 'infinity',
  constraint ci_versions_pkey primary key (ci_id, valid_from)
);
-- the list's orders (see 0001 and 0009), each entry carrying its validity so that versions of
-- other moments are passed over without reading the table
create index ci_versions_by_created on ci_versions (tenant_id, status, created_at, ci_id) include (valid_from, valid_to);
create index ci_versions_by_name on ci_versions (tenant_id, status, name, ci_id) include (valid_from, valid_to);
create index ci_versions_by_type on ci_versions (tenant_id, ci_type, status, created_at, ci_id) include (valid_from, valid_to);
create index ci_versions_by_namespace on ci_versions (tenant_id, namespace, status, created_at, ci_id) include (valid_from, valid_to);
create index ci_versions_ended on ci_versions (valid_to) where valid_to <> 'infinity';

create function cinv_version_created() returns trigger language plpgsql as $$
begin
  insert into ci_versions (ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, valid_from)
  select ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, created_at from created
  on conflict (ci_id, valid_from) do nothing;
  return null;
end $$;
create trigger cinv_version_created after insert on configuration_items
  referencing new table as created for each statement execute function cinv_version_created();

-- A version ends where the next begins (the write's updated_at); two writes in one instant keep
-- the later's values.
create function cinv_version_changed() returns trigger language plpgsql as $$
begin
  update ci_versions set valid_to = new.updated_at
  where ci_id = new.ci_id and valid_to = 'infinity' and valid_from < new.updated_at;
  insert into ci_versions (ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, valid_from)
  values (new.ci_id, new.tenant_id, new.source_id, new.scope_id, new.ci_type, new.name, new.namespace, new.status, new.created_at, new.updated_at)
  on conflict (ci_id, valid_from) do update
    set scope_id = excluded.scope_id, ci_type = excluded.ci_type, name = excluded.name, namespace = excluded.namespace,
        status = excluded.status, valid_to = 'infinity';
  return null;
end $$;
create trigger cinv_version_changed after update on configuration_items
  for each row when ((old.name, old.namespace, old.ci_type, old.scope_id, old.status)
                     is distinct from (new.name, new.namespace, new.ci_type, new.scope_id, new.status))
  execute function cinv_version_changed();

-- A CI removed with a tombstone (the archive retention) ends its version when it was removed; one
-- removed without (its source's data taken away) takes its versions along.
create function cinv_version_removed() returns trigger language plpgsql as $$
begin
  update ci_versions v set valid_to = t.removed_at
  from removed r join ci_tombstones t on t.ci_id = r.ci_id
  where v.ci_id = r.ci_id and v.valid_to = 'infinity';
  delete from ci_versions v using removed r
  where v.ci_id = r.ci_id and not exists (select 1 from ci_tombstones t where t.ci_id = r.ci_id);
  return null;
end $$;
create trigger cinv_version_removed after delete on configuration_items
  referencing old table as removed for each statement execute function cinv_version_removed();

-- The versions of what exists, and of what was removed with a tombstone. What changed in the
-- columns above before this migration is only in ci_undo: an installation that has such changes
-- reads the past exactly from now on (see time_machine).
insert into ci_versions (ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, valid_from)
  select ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, created_at from configuration_items;
insert into ci_versions (ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, valid_from, valid_to)
  select ci_id, tenant_id, source_id, scope_id, ci_type, name, namespace, status, created_at, created_at, removed_at from ci_tombstones
  on conflict (ci_id, valid_from) do nothing;
update time_machine set exact_since = greatest(exact_since, now())
  where exists (select 1 from ci_undo u, jsonb_array_elements(u.undo) op
                where op -> 'p' ->> 0 in ('name', 'namespace', 'ci_type', 'scope_id', 'status'))
     or exists (select 1 from ci_tombstones);

-- Whether a CI differs between two moments, without taking it back: a digest of what it is (not
-- when it was written), over the row as JSON. Timestamps are digested
-- as instants, so that the session's time zone, which renders them in JSON, does not count.
create function cinv_state_digest(doc jsonb) returns bytea language sql immutable parallel safe as $$
  select decode(md5((doc - 'updated_at' - 'content_hash' - 'tenant_id' - 'status_updated_at' - 'created_at' - 'removed_at')::text
                    || '|' || coalesce(extract(epoch from (doc ->> 'status_updated_at')::timestamptz)::text, '')), 'hex')
$$;

-- Each write's way back carries the digest of the row before it: the digest of a CI at a moment
-- is that of the first write after it, or of the row as it is (computed when asked for: a digest
-- kept with every row cost the first load of a cluster more than the load itself).
alter table ci_undo add column before_digest bytea;

create or replace function cinv_record_undo() returns trigger language plpgsql as $$
declare
  ops jsonb := '[]';
begin
  if old.name is distinct from new.name then ops := ops || jsonb_build_array(jsonb_build_object('p', '["name"]'::jsonb, 'v', to_jsonb(old.name))); end if;
  if old.namespace is distinct from new.namespace then ops := ops || jsonb_build_array(jsonb_build_object('p', '["namespace"]'::jsonb, 'v', to_jsonb(old.namespace))); end if;
  if old.ci_type is distinct from new.ci_type then ops := ops || jsonb_build_array(jsonb_build_object('p', '["ci_type"]'::jsonb, 'v', to_jsonb(old.ci_type))); end if;
  if old.scope_id is distinct from new.scope_id then ops := ops || jsonb_build_array(jsonb_build_object('p', '["scope_id"]'::jsonb, 'v', to_jsonb(old.scope_id))); end if;
  if old.status is distinct from new.status then ops := ops || jsonb_build_array(jsonb_build_object('p', '["status"]'::jsonb, 'v', to_jsonb(old.status))); end if;
  if old.status_updated_at is distinct from new.status_updated_at then
    ops := ops || jsonb_build_array(jsonb_build_object('p', '["status_updated_at"]'::jsonb, 'v', to_jsonb(old.status_updated_at)));
  end if;
  if old.raw_data is distinct from new.raw_data then
    ops := ops || (select coalesce(jsonb_agg(op), '[]') from cinv_jsonb_undo(old.raw_data, new.raw_data, '{raw_data}') as op);
  end if;
  if old.type_data is distinct from new.type_data then
    ops := ops || (select coalesce(jsonb_agg(op), '[]') from cinv_jsonb_undo(old.type_data, new.type_data, '{type_data}') as op);
  end if;
  if ops <> '[]' then
    ops := ops || jsonb_build_array(jsonb_build_object('p', '["updated_at"]'::jsonb, 'v', to_jsonb(old.updated_at)));
    insert into ci_undo (tenant_id, ci_id, at, undo, before_digest)
    values (new.tenant_id, new.ci_id, new.updated_at, ops, cinv_state_digest(to_jsonb(old)));
  end if;
  return null;
end $$;

-- The digest of a CI at a moment, the long way (for a first write after it recorded before digests
-- were kept): the CI taken back to the moment.
create function cinv_digest_at(for_tenant uuid, for_ci uuid, since timestamptz) returns bytea
  language sql stable parallel safe as $$
  select coalesce(
    (select cinv_state_digest(to_jsonb(s)) from configuration_items c cross join lateral cinv_ci_at(to_jsonb(c), since) s
     where c.tenant_id = for_tenant and c.ci_id = for_ci),
    (select cinv_state_digest(to_jsonb(s)) from ci_tombstones g cross join lateral cinv_ci_at(to_jsonb(g) - 'removed_at', since) s
     where g.tenant_id = for_tenant and g.ci_id = for_ci))
$$;
