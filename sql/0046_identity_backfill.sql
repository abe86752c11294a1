-- The identity worker's first start resolves the stored CIs page by page, one transaction each,
-- rather than all in one: where that backfill stands (null once done).
alter table identity_progress add column backfill_after uuid;

-- every table has a primary key: a link is one row of an observation's history
alter table identity_links add column id bigint generated always as identity primary key;
