-- Every change to what a key or user may do is announced on the channel `cinv_principals`, at
-- commit: servers keep the principals of recently used keys in memory (CINV_KEY_CACHE) and drop
-- them when told, so that a revocation, deactivation or withdrawn grant counts from the next
-- request in every process. Statement-level, so a statement touching many rows notifies once,
-- and PostgreSQL folds a transaction's identical notifications into one. Bookkeeping columns
-- written on use (api_keys.last_used_at, users.last_login_at) are left out of the column lists:
-- they change nothing a principal holds.

create function cinv_principals_changed() returns trigger
language plpgsql as $$
begin
  perform pg_notify('cinv_principals', '');
  return null;
end $$;

create trigger api_keys_principals_changed
  after update of tenant_id, name, tier, key_hash, permissions, user_id, expires_at, revoked_at, narrow_permissions, narrow_scopes
     or delete or truncate on api_keys
  for each statement execute function cinv_principals_changed();

create trigger users_principals_changed
  after update of tenant_id, name, email, superadmin, deactivated_at or delete or truncate on users
  for each statement execute function cinv_principals_changed();

-- every change to these tables is one to rights
do $$
declare
  t text;
begin
  foreach t in array array['api_key_scopes', 'grants', 'team_members', 'data_scopes'] loop
    execute format(
      'create trigger %I after insert or update or delete or truncate on %I for each statement execute function cinv_principals_changed()',
      t || '_principals_changed', t);
  end loop;
end $$;
