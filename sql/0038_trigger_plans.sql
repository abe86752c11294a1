-- A reconcile's transaction plans its statements at every execution (plan_cache_mode, see
-- lockSource in src/inventory/store.ts), and that setting reaches the statements of PL/pgSQL
-- functions too: a trigger that fires per row then planned its own statements again for every row,
-- which more than doubled what a changed CI's rewrite cost (1 000 changed pods: 425 ms of backend
-- CPU against 280 ms with the trigger's plans cached). The per-row triggers of the write path keep
-- their plans whatever the transaction says; their statements touch one CI's rows by key, which a
-- cached plan serves as well as a fresh one. Statement-level triggers are planned once per
-- statement and keep following the transaction, as their transition tables vary in size.
alter function cinv_record_undo() set plan_cache_mode = auto;
alter function cinv_version_changed() set plan_cache_mode = auto;
alter function cinv_source_moved() set plan_cache_mode = auto;
alter function cinv_tenant_moved() set plan_cache_mode = auto;
alter function cinv_feed_commit() set plan_cache_mode = auto;
