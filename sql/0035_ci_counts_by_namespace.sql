-- A list filtered by namespace takes its total from ci_counts, whose key leads with (tenant,
-- status, type): the namespace, last in it, was a filter over every row of the type. At 1M CIs in
-- seven instances of 400 namespaces, the total of one namespace's pods read 2 800 entries for 7
-- rows (0.7-2.6 ms, as long as the page itself). Led by the namespace, the count reads its rows.
create index ci_counts_by_namespace on ci_counts (tenant_id, namespace, status, ci_type) include (cis);
