-- The inventory diff reads every write of an interval with its digests, source, type, status and
-- whether it started a version (sql/0023): carried in the time index, that read is an index-only
-- range, and the way back's heap (each row holds the values taken back, about a kilobyte) is not
-- touched. A day of a million-CI inventory is ~150 000 writes: 170 MB of heap against ~15 MB of index.
drop index ci_undo_by_time;
create index ci_undo_by_time on ci_undo (tenant_id, at, ci_id) include (id, before_digest, after_digest, source_id, ci_type, status, versioned);
