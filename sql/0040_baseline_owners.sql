-- A baseline's owner: the principal that named it, a user (the person behind a user token or a
-- session) or an API key, at most one of them. Only the owner, or a principal whose rights cover
-- the owner's, may delete it; everyone who reads the inventory still lists it and diffs against it.
-- Baselines named before owners were recorded, and those whose owner is gone, have neither: they
-- belong to the tenant's administrators, principals with all data (and configuration_items:write).
alter table baselines
  add column user_id uuid references users (id) on delete set null,
  add column api_key_id uuid references api_keys (id) on delete set null,
  add constraint baselines_one_owner check (num_nonnulls(user_id, api_key_id) <= 1);
