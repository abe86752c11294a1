-- Field paths become searchable by their segments too: "replicas" finds a change of
-- raw_data.spec.replicas, while the whole dotted path stays one lexeme for exact path searches.
-- A generated column's expression cannot change in place, so the column is rebuilt.

drop index changes_search;
alter table change_records drop column search_vector;

create or replace function cinv_change_document(name text, namespace text, fields text[]) returns tsvector
  language sql immutable parallel safe
  as $$ select to_tsvector('simple'::regconfig,
    coalesce(name, '') || ' ' || coalesce(namespace, '') || ' ' ||
    coalesce(array_to_string(fields, ' '), '') || ' ' ||
    coalesce(translate(array_to_string(fields, ' '), '.', ' '), '')) $$;

alter table change_records
  add column search_vector tsvector generated always as (cinv_change_document(ci_name, ci_namespace, changed_fields)) stored;
create index changes_search on change_records using gin (search_vector);
