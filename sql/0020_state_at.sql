-- A CI row as it was at a moment, in the database: every read of the past (one CI, a list page,
-- a relationship's neighbour, a diff) goes through this one function, so they agree by construction.

-- `doc` is the row (to_jsonb of configuration_items or ci_tombstones); every write after `at` is
-- taken back, newest first. The operations of one write have disjoint paths (cinv_jsonb_undo), so
-- their order inside it does not matter; paths lead only through objects, so jsonb_set finds the
-- parent of every key it puts back.
create function cinv_undo_to(doc jsonb, for_tenant uuid, for_ci uuid, since timestamptz) returns jsonb
  language plpgsql stable parallel safe as $$
declare
  op jsonb;
  path text[];
begin
  for op in
    select e.op from ci_undo u cross join lateral jsonb_array_elements(u.undo) with ordinality as e(op, n)
    where u.tenant_id = for_tenant and u.ci_id = for_ci and u.at > since
    order by u.at desc, u.id desc, e.n
  loop
    path := array(select jsonb_array_elements_text(op -> 'p'));
    if op ? 'v' then
      doc := jsonb_set(doc, path, op -> 'v', true);
    else
      doc := doc #- path;
    end if;
  end loop;
  return doc;
end $$;

-- The same as a configuration_items row (last_seen is not part of it: it is not history).
create function cinv_ci_at(doc jsonb, at timestamptz) returns configuration_items
  language sql stable parallel safe as $$
  select jsonb_populate_record(null::configuration_items,
                               cinv_undo_to(doc, (doc ->> 'tenant_id')::uuid, (doc ->> 'ci_id')::uuid, at))
$$;
