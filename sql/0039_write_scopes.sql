-- The write side of data scopes.
--
-- A change record of a CI that moved between instances of its source carries the values it had in
-- the instance it left (the UPDATED record's old values). It is stored under the instance the CI
-- moved into, and is shown only to principals that may see the instance it came from as well:
-- the instance it left is kept here, and every read of history checks it (auth/scope.ts).
-- An installation still moving its history into partitions (sql/0016) has both tables, whose
-- columns must stay alike: the move copies rows as they are.
do $$
declare t text;
begin
  foreach t in array array['change_records', 'change_records_next'] loop
    if exists (select 1 from pg_class where relname = t and relnamespace = current_schema()::regnamespace) then
      execute format('alter table %I add column moved_from_scope_id text', t);
    end if;
  end loop;
end $$;

-- A reference written by a principal that holds only some instances of the source resolves only to
-- targets inside them: a reference resolved into another instance would tell the writer that the
-- external id exists there, and give it an edge into data it may not write. Null: any instance (a
-- writer of the whole source, or a collection).
alter table pending_relationships add column target_scopes text[];
