-- Readable changes (src/history/records/kinds.ts, src/history/change-rules/, docs/readable-changes.md):
-- every change record gets a kind and a severity, a fingerprint its repeats share, and the fold
-- it belongs to; change rules ignore, classify or roll up records. The exact records stay as they
-- were written: these columns only say how to read them.

-- kind, severity: set by the shipped rules (kinds.ts) and the tenant's change rules, at write time
-- or when rules are re-applied to a window. fingerprint: the hash of the record's patch with what
-- varies between repeats (ids, times, durations, counters) replaced by tokens. fold_at: null on a
-- record that opens a fold (or folds nothing), the first record's changed_at on a repeat that
-- joined it. ignored: hidden by a rule (still stored, shown on request). rolls_up: read on its
-- workload owner's timeline too (pods and replica sets by default, and what a rule rolls up).
-- An installation still moving its history into partitions (sql/0016) has both tables, whose
-- columns must stay alike: the move copies rows as they are.
do $$
declare t text;
begin
  foreach t in array array['change_records', 'change_records_next'] loop
    if exists (select 1 from pg_class where relname = t and relnamespace = current_schema()::regnamespace) then
      execute format('alter table %I add column kind text, add column severity text, add column fingerprint text, '
                     'add column fold_at timestamptz, add column ignored boolean not null default false, '
                     'add column rolls_up boolean not null default false', t);
    end if;
  end loop;
end $$;

-- filters on kind and severity go through these, as change_type's do; whether a window holds
-- ignored records, which the statistics pre-aggregate counts too (a partial index of those only);
-- and the folds' first records, which a folded read pages through
do $$
declare t text;
begin
  foreach t in array array['change_records', 'change_records_next'] loop
    if exists (select 1 from pg_class where relname = t and relnamespace = current_schema()::regnamespace) then
      execute format('create index %I on %I (tenant_id, kind, changed_at)',
                     case when t = 'change_records' then 'changes_by_change_kind' else 'changes_by_change_kind_next' end, t);
      execute format('create index %I on %I (tenant_id, severity, changed_at)',
                     case when t = 'change_records' then 'changes_by_severity' else 'changes_by_severity_next' end, t);
      execute format('create index %I on %I (tenant_id, changed_at) where ignored',
                     case when t = 'change_records' then 'changes_ignored' else 'changes_ignored_next' end, t);
      -- a folded read walks the records that open a fold (or fold nothing), in time order
      execute format('create index %I on %I (tenant_id, changed_at, id) where fold_at is null',
                     case when t = 'change_records' then 'changes_fold_heads' else 'changes_fold_heads_next' end, t);
    end if;
  end loop;
end $$;

-- A fold's repeats after its first record: one row per fold that has any (a record without
-- repeats has none). The first record's changed_at names the fold, with its CI and fingerprint.
create table change_folds (
  tenant_id uuid not null,
  ci_id uuid not null,
  fingerprint text not null,
  fold_at timestamptz not null,
  repeats integer not null,
  last_at timestamptz not null,
  constraint change_folds_pkey primary key (tenant_id, ci_id, fingerprint, fold_at)
);

-- The fold a new record of a CI with a fingerprint may still join: its first record's time. A
-- creation or a deletion of the CI ends them all; upkeep drops the ones past every window.
create table change_fold_heads (
  tenant_id uuid not null,
  ci_id uuid not null,
  fingerprint text not null,
  fold_at timestamptz not null,
  constraint change_fold_heads_pkey primary key (tenant_id, ci_id, fingerprint)
);
create index change_fold_heads_age on change_fold_heads (fold_at);

-- How a tenant's history reads: the fold window.
create table change_settings (
  tenant_id uuid primary key references tenants (id) on delete cascade,
  fold_window_seconds integer not null default 3600 check (fold_window_seconds between 60 and 604800),
  updated_at timestamptz not null default now()
);

-- Administrators' change rules, applied in position order: the first ignore wins, the last
-- classification of kind and of severity wins, any roll-up rolls up.
create table change_rules (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants (id) on delete cascade,
  name text not null,
  match text not null,
  action text not null check (action in ('ignore', 'classify', 'rollup')),
  kind text,
  severity text check (severity in ('info', 'low', 'medium', 'high')),
  position integer not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint change_rules_name unique (tenant_id, name)
);
create index change_rules_by_tenant on change_rules (tenant_id, position);

-- A re-application of the rules to a window of history, done in batches by the rules worker.
create table change_rule_runs (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants (id) on delete cascade,
  from_at timestamptz not null,
  until_at timestamptz not null,
  -- the next record to take, by (changed_at, id): null before the first batch
  after_at timestamptz,
  after_id bigint,
  records bigint not null default 0,
  changed bigint not null default 0,
  requested_by text not null,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index change_rule_runs_open on change_rule_runs (created_at) where finished_at is null;

-- The statistics by kind: counted per day, beside the counts by change type.
create table change_stats_kinds (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  source_id bigint,
  scope_id text,
  moved_from_scope_id text,
  day timestamptz not null,
  kind text not null,
  changes bigint not null,
  constraint change_stats_kinds_key unique nulls not distinct (tenant_id, day, source_id, scope_id, moved_from_scope_id, kind)
);

-- The history written before classification gets its kinds and severities from a re-application
-- of the rules over all of it, which the rules worker does in batches after the upgrade.
insert into change_rule_runs (tenant_id, from_at, until_at, requested_by)
select t.id, '-infinity', 'infinity', 'upgrade' from tenants t
where exists (select 1 from change_records cr where cr.tenant_id = t.id);
