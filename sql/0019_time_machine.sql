-- The inventory as it was at any moment: every write to a CI row leaves the way back to the row
-- before it, a removed CI leaves its last row, and a removed relationship the time it existed.

-- A JSON document's way back from `new` to `old`, as operations on exact paths (arrays of keys,
-- so keys holding dots stay whole): {"p": path, "v": value} puts a value back, {"p": path} removes
-- a key that did not exist. Objects are descended into; anything else is put back whole. A set of
-- rows, aggregated once by the caller: a document with 100 000 changed keys must not be copied
-- once per key.
create function cinv_jsonb_undo(old jsonb, new jsonb, path text[]) returns setof jsonb
  language plpgsql immutable parallel safe as $$
declare
  k text;
begin
  if jsonb_typeof(old) = 'object' and jsonb_typeof(new) = 'object' then
    return query
      select case when o.value is null then jsonb_build_object('p', to_jsonb(path || n.key))
                  else jsonb_build_object('p', to_jsonb(path || o.key), 'v', o.value) end
      from jsonb_each(old) o full join jsonb_each(new) n on n.key = o.key
      where o.key is null or n.key is null
         or (o.value is distinct from n.value and not (jsonb_typeof(o.value) = 'object' and jsonb_typeof(n.value) = 'object'));
    for k in
      select o.key from jsonb_each(old) o join jsonb_each(new) n on n.key = o.key
      where o.value is distinct from n.value and jsonb_typeof(o.value) = 'object' and jsonb_typeof(n.value) = 'object'
    loop
      return query select * from cinv_jsonb_undo(old -> k, new -> k, path || k);
    end loop;
    return;
  end if;
  return next jsonb_build_object('p', to_jsonb(path), 'v', old);
end $$;

-- One row per write that changed what a CI is (not its last_seen, metrics or digest), at the
-- write's own time (the row's new updated_at): applied newest first to the row as it is now, the
-- operations give the row as it was at any earlier moment.
create table ci_undo (
  id bigint generated always as identity,
  tenant_id uuid not null,
  ci_id uuid not null,
  at timestamptz not null,
  undo jsonb not null,
  constraint ci_undo_pkey primary key (id, at)
) partition by range (at);
create index ci_undo_by_ci on ci_undo (tenant_id, ci_id, at, id);
create index ci_undo_by_time on ci_undo (tenant_id, at, ci_id);
create table ci_undo_default partition of ci_undo default;

create function cinv_record_undo() returns trigger language plpgsql as $$
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
    insert into ci_undo (tenant_id, ci_id, at, undo) values (new.tenant_id, new.ci_id, new.updated_at, ops);
  end if;
  return null;
end $$;

create trigger cinv_undo after update on configuration_items
  for each row when (old.* is distinct from new.*) execute function cinv_record_undo();

-- A CI removed for good (the archive retention): its last row, so that the moments it existed
-- can still be read.
create table ci_tombstones (
  ci_id uuid primary key,
  tenant_id uuid not null,
  source_id bigint not null,
  scope_id text,
  external_id text not null,
  ci_type text not null,
  name text not null,
  namespace text,
  status text not null,
  status_updated_at timestamptz,
  raw_data jsonb not null,
  type_data jsonb not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  removed_at timestamptz not null
);
create index ci_tombstones_removed on ci_tombstones (removed_at);

-- A relationship that is no more, with the time it existed; the ones that exist are in
-- relationships (existing since created_at).
create table relationship_history (
  id bigint generated always as identity,
  -- the id it had in relationships, which it keeps in a view of the past
  relationship_id bigint not null,
  tenant_id uuid not null,
  source_id bigint,
  from_ci_id uuid not null,
  to_ci_id uuid not null,
  relationship_type text not null,
  from_scope_id text,
  to_scope_id text,
  valid_from timestamptz not null,
  valid_to timestamptz not null,
  constraint relationship_history_pkey primary key (id, valid_to)
) partition by range (valid_to);
create index relationship_history_from on relationship_history (tenant_id, from_ci_id, valid_to);
create index relationship_history_to on relationship_history (tenant_id, to_ci_id, valid_to);
create table relationship_history_default partition of relationship_history default;

-- The moment from which the inventory can be read as it was: an installation that held CIs before
-- this migration has no way back past it.
create table time_machine (
  id integer primary key default 1 check (id = 1),
  exact_since timestamptz not null
);
insert into time_machine (exact_since)
  select case when exists (select 1 from configuration_items) then now() else '-infinity' end;
