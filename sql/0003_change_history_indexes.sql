-- Orders of the global change history besides changed_at (which changes_by_time serves). The CSV
-- export walks a sorted result in keyset batches on (sort column, id); without an index in exactly
-- that order every batch would sort the whole filtered history again.
create index changes_by_name_id on change_records (tenant_id, ci_name, id);
create index changes_by_type_id on change_records (tenant_id, ci_type, id);
create index changes_by_kind_id on change_records (tenant_id, change_type, id);
