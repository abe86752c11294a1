-- Source credentials, encrypted. Each tenant has data keys (AES-256), each wrapped by the master
-- key (CINV_MASTER_KEY) and stored with the fingerprint of the master key that wrapped it, so a
-- master-key rotation re-wraps row by row and can be interrupted and resumed. A credential
-- document is encrypted under the tenant's newest data key with a fresh nonce; the additional
-- authenticated data binds tenant, source and key version.
create table tenant_data_keys (
  tenant_id uuid not null references tenants (id),
  version integer not null,
  wrapped bytea not null,
  master_fingerprint text not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, version)
);

create table source_credentials (
  source_id bigint primary key references sources (id),
  tenant_id uuid not null references tenants (id),
  credential_type text not null,
  key_version integer not null,
  nonce bytea not null,
  ciphertext bytea not null,
  updated_at timestamptz not null
);
