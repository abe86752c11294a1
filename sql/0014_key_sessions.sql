-- The web interface signs a person in with an API key or user token when there is no single
-- sign-on: the key is exchanged once for a session, so it never has to be kept in the browser.
-- Such a session acts as its key at every request (a revoked or expired key ends it); exactly one
-- of user_id and api_key_id names who the session is.
alter table sessions alter column user_id drop not null;
alter table sessions add column api_key_id uuid references api_keys (id) on delete cascade;
alter table sessions add constraint sessions_one_subject check (num_nonnulls(user_id, api_key_id) = 1);
create index sessions_api_key on sessions (api_key_id) where api_key_id is not null;
