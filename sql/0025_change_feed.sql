-- The change feed: every change record in the order its transaction committed, so that a consumer
-- following a cursor sees each record exactly once. Record ids are taken when a record is written,
-- and transactions commit in another order: a reader that has passed id 120 can later meet a
-- committed 110. Positions are therefore handed out at commit instead: each transaction that wrote
-- change records takes one position just before it commits (a deferred trigger), under a lock held
-- until the commit is done and visible. Positions are thus visible in order: whoever sees position
-- P sees every lower one that committed. A transaction's records are found by its id (txid).
--
-- Records written before this migration have no txid and are not in the feed.

create table change_feed (
  position bigint generated always as identity primary key,
  txid xid8 not null,
  committed_at timestamptz not null default clock_timestamp()
);
create index change_feed_by_time on change_feed (committed_at);

-- One row per transaction that wrote change records, inserted by its first such statement and
-- deleted at its commit: the row's insert is what the deferred trigger fires on, once per transaction.
create table change_feed_pending (txid xid8 primary key);

create function cinv_feed_mark() returns trigger language plpgsql as $$
begin
  insert into change_feed_pending (txid) values (pg_current_xact_id()) on conflict do nothing;
  return null;
end $$;

-- Both tables while an installation's records are still being moved into partitions (sql/0016):
-- the swap then leaves the column, its index and the trigger on the table that stays.
do $$
declare t text;
begin
  foreach t in array array['change_records', 'change_records_next'] loop
    if exists (select 1 from pg_class where relname = t and relnamespace = current_schema()::regnamespace) then
      execute format('alter table %I add column txid xid8', t);
      execute format('alter table %I alter column txid set default pg_current_xact_id()', t);
      -- the swap of sql/0016 gives the new table's indexes their names by dropping a `_next` suffix
      execute format('create index %I on %I (txid, id) where txid is not null',
                     case when t = 'change_records' then 'change_records_by_txid' else 'change_records_by_txid_next' end, t);
      execute format('create trigger %I after insert on %I for each statement execute function cinv_feed_mark()', t || '_feed', t);
    end if;
  end loop;
end $$;

create function cinv_feed_commit() returns trigger language plpgsql as $$
begin
  -- held until the commit is visible: the next position is taken only after this one can be seen
  perform pg_advisory_xact_lock(hashtextextended('cinv:change-feed', 0));
  insert into change_feed (txid) values (new.txid);
  delete from change_feed_pending where txid = new.txid;
  return null;
end $$;

create constraint trigger change_feed_at_commit after insert on change_feed_pending
  deferrable initially deferred for each row execute function cinv_feed_commit();
