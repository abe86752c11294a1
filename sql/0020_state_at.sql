-- A CI row as it was at a moment, in the database: every read of the past (one CI, a list page,
-- a relationship's neighbour, a diff) goes through this one function, so they agree by construction.

-- One step back: `v` put back at `path` (restore), or the key at `path` removed. Expressions only,
-- so that PL/pgSQL evaluates it without a query per step.
create function cinv_undo_step(state jsonb, doc jsonb, path text[], restore boolean, v jsonb) returns jsonb
  language plpgsql immutable parallel safe as $$
begin
  if restore then
    return jsonb_set(coalesce(state, doc), path, v, true);
  end if;
  return coalesce(state, doc) #- path;
end $$;

create aggregate cinv_undo_agg(jsonb, text[], boolean, jsonb) (sfunc = cinv_undo_step, stype = jsonb);

-- `doc` is the row (to_jsonb of configuration_items or ci_tombstones); every write after `since`
-- is taken back, newest first. The operations of one write have disjoint paths (cinv_jsonb_undo),
-- so their order inside it does not matter; paths lead only through objects, so jsonb_set finds
-- the parent of every key it puts back.
-- Its cost tells the planner that taking a row back is dearer than reading it (the default, 100,
-- would have it take back every row written since a moment to sort a page).
create function cinv_undo_to(doc jsonb, for_tenant uuid, for_ci uuid, since timestamptz) returns jsonb
  language sql stable parallel safe cost 1000 as $$
  select coalesce((
    select cinv_undo_agg(doc, array(select jsonb_array_elements_text(e.op -> 'p')), e.op ? 'v', e.op -> 'v' order by u.at desc, u.id desc, e.n)
    from ci_undo u cross join lateral jsonb_array_elements(u.undo) with ordinality as e(op, n)
    where u.tenant_id = for_tenant and u.ci_id = for_ci and u.at > since), doc)
$$;

-- The same as a configuration_items row (last_seen is not part of it: it is not history). A set of
-- one row, so that the planner inlines it into the query that reads it.
create function cinv_ci_at(doc jsonb, at timestamptz) returns setof configuration_items
  language sql stable parallel safe rows 1 as $$
  select * from jsonb_populate_record(null::configuration_items,
                                      cinv_undo_to(doc, (doc ->> 'tenant_id')::uuid, (doc ->> 'ci_id')::uuid, at))
$$;
