-- The write path's references are checked once per statement instead of once per row. A foreign
-- key runs a query and takes a row lock per inserted row: a first load of 143 834 objects made five
-- such checks per object (the CI's tenant and source, its last-seen row's CI, its change record's
-- and its relationships' tenant), and the last-seen row's lock on the CI it was just inserted with
-- wrote a WAL record of its own. Each insert statement now checks its rows in one query over its
-- transition table, with the same error (foreign_key_violation), and locks the tenants and sources
-- it refers to as the foreign keys did (key share, once per statement and row referred to), so a
-- concurrent delete of one still waits and then finds it referenced. Deleting a referenced tenant
-- or source is refused as before, and deleting CIs removes their last-seen rows.
--
-- Not locked: the CI a last-seen row belongs to. Last-seen rows are inserted only in the
-- transaction that inserts or rewrites their CI, which holds that CI's row.
--
-- The checks find rows by a subquery per row or per distinct key, which is planned as an index probe
-- whatever the statistics said when PL/pgSQL cached the plan (a join may be planned as a scan of a
-- table that was nearly empty then).

alter table configuration_items drop constraint configuration_items_source_id_fkey;
alter table ci_last_seen drop constraint ci_last_seen_ci_id_fkey;

-- Lock the tenants or sources a statement names (key share, as a foreign key does) and refuse the
-- statement when one of them does not exist.
create function cinv_hold_tenants(ids uuid[], referrer text) returns void language plpgsql as $$
declare held int;
begin
  select count(*) into held from (select 1 from tenants where id = any(ids) for key share) as t;
  if held < cardinality(ids) then
    raise exception '%.tenant_id names a tenant that does not exist', referrer using errcode = 'foreign_key_violation';
  end if;
end $$;

create function cinv_hold_sources(ids bigint[], referrer text) returns void language plpgsql as $$
declare held int;
begin
  select count(*) into held from (select 1 from sources where id = any(ids) for key share) as s;
  if held < cardinality(ids) then
    raise exception '%.source_id names a source that does not exist', referrer using errcode = 'foreign_key_violation';
  end if;
end $$;

create function cinv_tenant_references() returns trigger language plpgsql as $$
begin
  perform cinv_hold_tenants(array(select distinct tenant_id from tenant_references_new), tg_table_name);
  return null;
end $$;

create function cinv_tenant_moved() returns trigger language plpgsql as $$
begin
  perform cinv_hold_tenants(array[new.tenant_id], tg_table_name);
  return new;
end $$;

create function cinv_source_references() returns trigger language plpgsql as $$
begin
  perform cinv_hold_sources(array(select distinct source_id from source_references_new), tg_table_name);
  return null;
end $$;

create function cinv_source_moved() returns trigger language plpgsql as $$
begin
  perform cinv_hold_sources(array[new.source_id], tg_table_name);
  return new;
end $$;

create trigger cinv_source_references after insert on configuration_items
  referencing new table as source_references_new for each statement execute function cinv_source_references();
create trigger cinv_source_moved before update of source_id on configuration_items
  for each row when (old.source_id is distinct from new.source_id) execute function cinv_source_moved();

-- The tenant's reference on every table that had one; change_records_next too while an
-- installation's records are still being moved into partitions (sql/0016).
do $$
declare
  t text;
  fk record;
begin
  foreach t in array array['configuration_items', 'relationships', 'change_records', 'change_records_next'] loop
    if exists (select 1 from pg_class where relname = t and relnamespace = current_schema()::regnamespace) then
      for fk in select conname from pg_constraint where conrelid = t::regclass and contype = 'f' and confrelid = 'tenants'::regclass loop
        execute format('alter table %I drop constraint %I', t, fk.conname);
      end loop;
      execute format('create trigger cinv_tenant_references after insert on %I
        referencing new table as tenant_references_new for each statement execute function cinv_tenant_references()', t);
      execute format('create trigger cinv_tenant_moved before update of tenant_id on %I
        for each row when (old.tenant_id is distinct from new.tenant_id) execute function cinv_tenant_moved()', t);
    end if;
  end loop;
end $$;

create function cinv_last_seen_references() returns trigger language plpgsql as $$
begin
  if exists (select 1 from last_seen_references_new n
             where (select 1 from configuration_items c where c.ci_id = n.ci_id) is null) then
    raise exception 'ci_last_seen.ci_id names a configuration item that does not exist' using errcode = 'foreign_key_violation';
  end if;
  return null;
end $$;

create trigger cinv_last_seen_references after insert on ci_last_seen
  referencing new table as last_seen_references_new for each statement execute function cinv_last_seen_references();

create function cinv_last_seen_removed() returns trigger language plpgsql as $$
begin
  delete from ci_last_seen l using last_seen_removed r where l.ci_id = r.ci_id;
  return null;
end $$;

create trigger cinv_last_seen_removed after delete on configuration_items
  referencing old table as last_seen_removed for each statement execute function cinv_last_seen_removed();

-- The referenced side: what the foreign keys refused (no action) is refused still. The row's lock,
-- taken before these run, waits for the inserts that hold it (key share) to end.
create function cinv_tenant_still_referenced() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and new.id = old.id then
    return new;
  end if;
  if exists (select 1 from configuration_items where tenant_id = old.id)
     or exists (select 1 from relationships where tenant_id = old.id)
     or exists (select 1 from change_records where tenant_id = old.id) then
    raise exception 'tenant % is still referenced by its inventory', old.id using errcode = 'foreign_key_violation';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end $$;

create trigger cinv_tenant_still_referenced before delete or update of id on tenants
  for each row execute function cinv_tenant_still_referenced();

create function cinv_source_still_referenced() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and new.id = old.id then
    return new;
  end if;
  if exists (select 1 from configuration_items where tenant_id = old.tenant_id and source_id = old.id) then
    raise exception 'source % still has configuration items', old.id using errcode = 'foreign_key_violation';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end $$;

create trigger cinv_source_still_referenced before delete or update of id on sources
  for each row execute function cinv_source_still_referenced();
