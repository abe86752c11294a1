-- A baseline is a named moment of a tenant's inventory ("release 4.2", "before the migration"):
-- diffs accept its name wherever they accept a moment. It holds no data: the inventory at that
-- moment is read from the history, under the reader's own data scopes.
create table baselines (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  at timestamptz not null,
  created_at timestamptz not null,
  -- who named it, as the audit log names principals
  created_by text not null
);
create unique index baselines_name on baselines (tenant_id, name);
create index baselines_at on baselines (tenant_id, at desc, id);
