-- An instance (scope_id) lies in one source, but the planner takes the two columns for independent:
-- a reader scoped to one of seven clusters of 1 000 000 CIs was expected to see 1/7 × 1/7 of them
-- (20 000, not 143 000), and a selective raw_data match was intersected with the whole instance's
-- index entries (55 of 62 ms for the pods of one node). The dependency's statistics correct the
-- estimate; ANALYZE keeps them, writes pay nothing.
create statistics ci_instance_dependency (dependencies) on source_id, scope_id from configuration_items;
analyze configuration_items;
