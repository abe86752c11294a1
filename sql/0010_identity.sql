-- People, teams, what they may do and which data they may see. Effective rights are computed at
-- request time from these rows, so a revoked grant or a removed membership holds on the next
-- request, on every replica.

create table users (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  email text,
  -- the single sign-on identity (issuer + subject); null for users who only hold tokens
  issuer text,
  subject text,
  superadmin boolean not null default false,
  created_at timestamptz not null default now(),
  deactivated_at timestamptz,
  last_login_at timestamptz,
  check ((issuer is null) = (subject is null)),
  unique (tenant_id, issuer, subject)
);
create unique index users_email on users (tenant_id, lower(email));
create index users_by_created on users (tenant_id, created_at, id);

create table teams (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  description text not null default '',
  created_at timestamptz not null default now(),
  unique (tenant_id, name)
);

create table team_members (
  team_id uuid not null references teams (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  added_at timestamptz not null default now(),
  primary key (team_id, user_id)
);
create index team_members_user on team_members (user_id);

-- A permission (resource:action) held by a user or a team.
create table grants (
  id bigint generated always as identity primary key,
  user_id uuid references users (id) on delete cascade,
  team_id uuid references teams (id) on delete cascade,
  permission text not null,
  check (num_nonnulls(user_id, team_id) = 1),
  unique nulls not distinct (user_id, team_id, permission)
);
create index grants_team on grants (team_id) where team_id is not null;

-- A data scope of a user or a team: a null scope_id is every instance of the source, a null
-- source_id (and scope_id) is all data.
create table data_scopes (
  id bigint generated always as identity primary key,
  user_id uuid references users (id) on delete cascade,
  team_id uuid references teams (id) on delete cascade,
  source_id bigint references sources (id) on delete cascade,
  scope_id text,
  check (num_nonnulls(user_id, team_id) = 1),
  check (source_id is not null or scope_id is null),
  unique nulls not distinct (user_id, team_id, source_id, scope_id)
);
create index data_scopes_team on data_scopes (team_id) where team_id is not null;

-- usr tokens belong to a user; a narrowed token names a subset of the user's rights in its own
-- permissions and scopes (api_key_scopes), and holds the intersection of those and the user's.
alter table api_keys add constraint api_keys_user foreign key (user_id) references users (id) on delete cascade;
alter table api_keys add column narrow_permissions boolean not null default false;
alter table api_keys add column narrow_scopes boolean not null default false;
alter table api_keys add check ((tier = 'usr') = (user_id is not null));
create index api_keys_user on api_keys (user_id, created_at) where user_id is not null;
