-- Relationships are written in the transaction of their owner's batch. A target that does not
-- exist yet (it may come in a later batch, or a later ingest) is kept here by external id, and
-- resolved in the transaction that creates the target. So a crash between batches never leaves an
-- owner whose content digest says "stored" while its relationships are missing.
create table pending_relationships (
  tenant_id uuid not null,
  source_id bigint not null,
  target_external_id text not null,
  from_ci_id uuid not null,
  relationship_type text not null,
  created_at timestamptz not null,
  primary key (tenant_id, source_id, target_external_id, from_ci_id, relationship_type)
);
create index pending_relationships_owner on pending_relationships (from_ci_id);

-- The search document is bounded: a tsvector holds at most 1 MB, and a change of 100 000 fields
-- once failed its whole batch. Names and namespace come first, so they are always searchable.
create or replace function cinv_change_document(name text, namespace text, fields text[]) returns tsvector
  language sql immutable parallel safe
  as $$ select to_tsvector('simple'::regconfig, left(
    coalesce(name, '') || ' ' || coalesce(namespace, '') || ' ' ||
    coalesce(array_to_string(fields, ' '), '') || ' ' ||
    coalesce(translate(array_to_string(fields, ' '), '.', ' '), ''), 100000)) $$;
