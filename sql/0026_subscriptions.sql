-- Change subscriptions: each follows the change feed (sql/0025) from its own cursor and delivers
-- what its owner may read, in batches, to a webhook or a NATS JetStream subject.
create table subscriptions (
  id uuid primary key,
  tenant_id uuid not null references tenants (id),
  name text not null,
  -- whose rights a delivery reads with: an API key (or user token) or a user signed in
  owner_kind text not null check (owner_kind in ('api_key', 'user')),
  owner_id uuid not null,
  owner_name text not null,
  sink jsonb not null,
  filters text[] not null default '{}',
  search text,
  enabled boolean not null default true,
  -- active: delivering; failing: a batch was dead-lettered since the last success; paused: the owner
  -- may no longer read changes (deactivated, revoked, rights taken); gone: the receiver answered 410
  state text not null default 'active' check (state in ('active', 'failing', 'paused', 'gone')),
  state_reason text,
  -- the signing secret, sealed with the tenant's data key; the one before a rotation stays valid
  -- for signatures until previous_until
  secret_key_version integer not null,
  secret_nonce bytea not null,
  secret_ciphertext bytea not null,
  previous_key_version integer,
  previous_nonce bytea,
  previous_ciphertext bytea,
  previous_until timestamptz,
  -- where in the feed the next batch starts
  feed_position bigint not null,
  feed_record bigint not null,
  next_sequence bigint not null default 1,
  -- which process delivers it now (one at a time, across replicas)
  lease_owner text,
  lease_until timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  constraint subscriptions_name_unique unique (tenant_id, name)
);
create index subscriptions_by_tenant on subscriptions (tenant_id, name);

-- Each batch, frozen when it is cut from the feed: its body and webhook-id stay the same across
-- retries and redeliveries. Not tied to the CIs it names: removing a CI keeps its pending deliveries.
create table subscription_deliveries (
  id bigint generated always as identity primary key,
  subscription_id uuid not null references subscriptions (id) on delete cascade,
  tenant_id uuid not null,
  sequence bigint not null,
  message_id text not null,
  body text not null,
  records integer not null,
  -- when the batch's first record committed: delivery lag is measured from it
  committed_at timestamptz not null,
  status text not null check (status in ('pending', 'delivered', 'dead')),
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_attempt_at timestamptz,
  response_status integer,
  response_ms integer,
  error text,
  created_at timestamptz not null,
  -- the retry window runs from here: the batch's creation, or a redelivery asked for
  retry_since timestamptz not null,
  delivered_at timestamptz,
  constraint subscription_deliveries_sequence_unique unique (subscription_id, sequence)
);
create index subscription_deliveries_pending on subscription_deliveries (subscription_id, sequence) where status = 'pending';
create index subscription_deliveries_by_id on subscription_deliveries (subscription_id, id);
-- delivered batches are kept a while for the log and redelivery, then trimmed by the delivery job
create index subscription_deliveries_delivered on subscription_deliveries (delivered_at) where status = 'delivered';
