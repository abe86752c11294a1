-- Indexes that hand out a page in its order, so a page costs its own rows and not a sort of every
-- row its filters match.

-- A relationship walk pages by id within one CI's incoming rows (a node with every pod of the
-- cluster running on it). The type stays reachable as a filter of that range.
drop index relationships_incoming;
create index relationships_incoming on relationships (tenant_id, to_ci_id, id);

-- CI lists filtered by type or namespace, in the default order (created_at): a namespace holding
-- tens of thousands of pods no longer sorts them all for each page of 50.
drop index ci_by_type;
create index ci_by_type on configuration_items (tenant_id, ci_type, status, created_at, ci_id);
drop index ci_by_namespace;
create index ci_by_namespace on configuration_items (tenant_id, namespace, status, created_at, ci_id);
