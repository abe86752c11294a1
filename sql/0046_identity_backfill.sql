-- The identity worker's first start resolves the stored CIs page by page, one transaction each,
-- rather than all in one: where that backfill stands (null once done).
alter table identity_progress add column backfill_after uuid;
