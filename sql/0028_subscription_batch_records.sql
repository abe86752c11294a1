-- A batch keeps the ids (and times, to find them in their partitions) of its change records instead
-- of its body: every subscription's batches name the same records, and storing each body wrote a
-- copy of every change record per subscription. The body is written again from the records when
-- the batch is sent; records never change, so it is the same on every attempt.
-- Batches cut before keep their body.
alter table subscription_deliveries
  alter column body drop not null,
  add column record_ids bigint[],
  add column record_times timestamptz[],
  add constraint subscription_deliveries_content check (body is not null or (record_ids is not null and record_times is not null));
