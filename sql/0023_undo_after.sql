-- What a write left behind, beside its way back: the digest of the row it wrote, the source, type
-- and status it left, and whether it started a new version (changed name, namespace, type, instance or
-- status). The inventory diff counts a CI written between two moments from these alone when none of
-- its writes in between started a version: its state at the earlier moment has the first write's
-- before_digest, at the later the last write's after_digest, and its type and status were the same
-- at both (and its source is its source for good). Writes recorded before this migration hold nulls and are compared the long way.
alter table ci_undo add column after_digest bytea, add column source_id bigint, add column ci_type text, add column status text,
  add column versioned boolean;

create or replace function cinv_record_undo() returns trigger language plpgsql as $$
declare
  ops jsonb := '[]';
  versioned boolean;
begin
  if old.name is distinct from new.name then ops := ops || jsonb_build_array(jsonb_build_object('p', '["name"]'::jsonb, 'v', to_jsonb(old.name))); end if;
  if old.namespace is distinct from new.namespace then ops := ops || jsonb_build_array(jsonb_build_object('p', '["namespace"]'::jsonb, 'v', to_jsonb(old.namespace))); end if;
  if old.ci_type is distinct from new.ci_type then ops := ops || jsonb_build_array(jsonb_build_object('p', '["ci_type"]'::jsonb, 'v', to_jsonb(old.ci_type))); end if;
  if old.scope_id is distinct from new.scope_id then ops := ops || jsonb_build_array(jsonb_build_object('p', '["scope_id"]'::jsonb, 'v', to_jsonb(old.scope_id))); end if;
  if old.status is distinct from new.status then ops := ops || jsonb_build_array(jsonb_build_object('p', '["status"]'::jsonb, 'v', to_jsonb(old.status))); end if;
  versioned := ops <> '[]';
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
    insert into ci_undo (tenant_id, ci_id, at, undo, before_digest, after_digest, source_id, ci_type, status, versioned)
    values (new.tenant_id, new.ci_id, new.updated_at, ops, cinv_state_digest(to_jsonb(old)), cinv_state_digest(to_jsonb(new)),
            new.source_id, new.ci_type, new.status, versioned);
  end if;
  return null;
end $$;
