import { Type, type Static } from '@sinclair/typebox';
import { HumanName, Nullable, Timestamp, Uuid } from '../../platform/http/schemas.js';
import { SEVERITIES } from '../records/kinds.js';

const Severity = Type.Union(SEVERITIES.map((s) => Type.Literal(s)));

export const RuleBody = Type.Object(
  {
    name: HumanName({ spaces: 'not_blank' }),
    match: Type.String({
      minLength: 1,
      maxLength: 2000,
      description:
        'Which records: a query-language match over the CI (`ci_type = k8s.pod and namespace = batch`) and the change ' +
        '(`change.kind`, `change.severity`, ordered info < low < medium < high, `change.type`, `change.field`: any field ' +
        'change’s path), e.g. `change.field starts with "raw_data.status" and name starts with canary-`. `*` matches every record.',
    }),
    action: Type.Union([Type.Literal('ignore'), Type.Literal('classify'), Type.Literal('rollup')], {
      description:
        '`ignore`: the record is kept and hidden (`include_ignored=true` lists it); `classify`: sets `kind`, `severity` ' +
        'or both; `rollup`: the record is read on its workload owner’s timeline too.',
    }),
    kind: Type.Optional(
      Nullable(Type.String({ pattern: '^[a-z][a-z0-9-]{0,39}$', description: 'With `classify`: the kind to set.' })),
    ),
    severity: Type.Optional(Nullable(Severity)),
    position: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: 'Where it applies among the rules (default: last).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RuleBody = Static<typeof RuleBody>;

export const Rule = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    match: Type.String(),
    action: Type.String(),
    kind: Nullable(Type.String()),
    severity: Nullable(Severity),
    position: Type.Integer(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { title: 'ChangeRule' },
);

export const RuleList = Type.Object({ items: Type.Array(Rule) }, { title: 'ChangeRuleList' });
export const RuleParams = Type.Object({ rule_id: Uuid("The rule's identifier.") });

export const ApplyBody = Type.Object(
  {
    from: Type.String({ format: 'date-time', description: 'The window’s start (inclusive).' }),
    until: Type.String({
      format: 'date-time',
      description: 'The window’s end (exclusive); 92 days after `from` at most.',
    }),
  },
  { additionalProperties: false },
);

export const Run = Type.Object(
  {
    id: Uuid(),
    from: Nullable(Timestamp()),
    until: Nullable(Timestamp()),
    records: Type.Integer({ description: 'Records read so far.' }),
    changed: Type.Integer({ description: 'Records whose kind, severity, ignored or roll-up moved.' }),
    done: Type.Boolean(),
    created_at: Timestamp(),
    finished_at: Nullable(Timestamp()),
  },
  { title: 'ChangeRuleApplication' },
);
export const RunParams = Type.Object({ run_id: Uuid('The application’s identifier.') });

export const Settings = Type.Object(
  {
    fold_window_seconds: Type.Integer({
      minimum: 60,
      maximum: 604_800,
      description:
        'Repeats of a change on a CI within this long of the fold’s first record fold into it (default 3600).',
    }),
  },
  { additionalProperties: false, title: 'ChangeSettings' },
);
