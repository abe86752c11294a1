-- The time machine's trigger runs for every write that changes what a CI is, so its cost is paid per
-- changed row of every collection. Both functions give the same answers as before, cheaper:
-- the digest removes its six keys in one step (each `-` of one key copied the whole row's document,
-- raw_data included), and the diff walks the two documents in one recursive query instead of a
-- PL/pgSQL call per nested object. The diff's operations keep disjoint paths; their order within a
-- write was never part of their meaning (they are applied as a set, see cinv_ci_at).
create or replace function cinv_state_digest(doc jsonb) returns bytea language sql immutable parallel safe as $$
  select decode(md5((doc - '{updated_at,content_hash,tenant_id,status_updated_at,created_at,removed_at}'::text[])::text
                    || '|' || coalesce(extract(epoch from (doc ->> 'status_updated_at')::timestamptz)::text, '')), 'hex')
$$;

create or replace function cinv_jsonb_undo(old jsonb, new jsonb, path text[]) returns setof jsonb
  language sql immutable parallel safe as $$
  with recursive d(path, o, n) as (
    select path, old, new
    union all
    select d.path || coalesce(e.ok, e.nk), e.ov, e.nv
    from d cross join lateral (
      select o.key as ok, o.value as ov, n.key as nk, n.value as nv
      from jsonb_each(d.o) o full join jsonb_each(d.n) n on n.key = o.key
      where o.value is distinct from n.value) e
    where jsonb_typeof(d.o) = 'object' and jsonb_typeof(d.n) = 'object'
  )
  select case when o is null then jsonb_build_object('p', to_jsonb(path)) else jsonb_build_object('p', to_jsonb(path), 'v', o) end
  from d
  where o is null or n is null or not (jsonb_typeof(o) = 'object' and jsonb_typeof(n) = 'object')
$$;
