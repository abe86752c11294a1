-- Database servers became identities of their own: the worker resolves the stored CIs once more
-- (resolution is idempotent), so that servers no change record names again are identified too.
-- A fresh installation has no progress row yet and backfills on its first start anyway.
update identity_progress set backfill_after = '00000000-0000-0000-0000-000000000000' where backfill_after is null;
