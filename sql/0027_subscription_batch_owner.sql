-- Each batch remembers whose rights cut it and where in the feed it began. A batch is only ever
-- sent for the owner it was cut for: when a subscription changes hands (a PUT makes its author the
-- owner), the undelivered batches of the previous owner are set aside and their records cut again
-- under the new owner's rights, from where the first of them began; a batch of a previous owner is
-- not redelivered.
alter table subscription_deliveries
  add column owner_kind text,
  add column owner_id uuid,
  add column from_position bigint,
  add column from_record bigint;
update subscription_deliveries d set owner_kind = s.owner_kind, owner_id = s.owner_id
from subscriptions s where s.id = d.subscription_id;
alter table subscription_deliveries alter column owner_kind set not null, alter column owner_id set not null;
