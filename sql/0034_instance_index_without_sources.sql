-- The reconciler finds a source's CIs by (tenant, source, external id) through ci_identity. Until
-- the planner has statistics for a source (its first load, before an ANALYZE), it rates
-- (tenant_id, source_id) as matching a row or two, and it took ci_by_scope, which leads with the
-- same two columns and is smaller, then filtered the source's every row by external id: one
-- batch's relationship targets took 18.6 s at 10 000 CIs. That index is for reads that name an
-- instance of a source (a data scope); a source as a whole is read through ci_identity. Holding
-- only the rows that have an instance, it can serve nothing else, whatever the statistics say.
create index ci_by_instance on configuration_items (tenant_id, source_id, scope_id) where scope_id is not null;
drop index ci_by_scope;
