import fc from 'fast-check';
import { CI_TYPES, IMAGES, LABELS, NAMES, NAMESPACES, RELATIONSHIP_TYPES, at } from './estate.js';
import type { CompareOp, GExpr, GField, GHop, GPipe, GQuery, GValue, TextOp } from './query.js';

/** Random queries over the whole grammar, with values drawn from the estates' own alphabets. */

const f = (name: string, ...path: string[]): GField => ({ name, path });

const TEXT_FIELDS = ['name', 'namespace', 'ci_type', 'status', 'scope_id', 'external_id'].map((n) => f(n));
const TIME_FIELDS = ['created_at', 'updated_at', 'status_updated_at', 'last_seen'].map((n) => f(n));
const JSON_FIELDS = [
  f('raw_data', 'spec', 'replicas'),
  f('raw_data', 'spec', 'image'),
  f('raw_data', 'spec', 'template'),
  f('raw_data', 'spec', 'template', 'image'),
  f('raw_data', 'spec', 'template', 'env'),
  f('raw_data', 'spec'),
  f('raw_data', 'metadata', 'labels', 'app'),
  f('raw_data', 'metadata', 'labels', 'tier'),
  f('raw_data', 'metadata', 'labels', 'app.io/name'),
  f('raw_data', 'status', 'ready'),
  f('raw_data', 'status', 'phase'),
  f('raw_data', 'ports'),
  f('raw_data', 'ports', '0'),
  f('raw_data', 'ports', '1'),
  f('raw_data', 'count'),
  f('raw_data', 'nothing', 'here'),
  f('type_data', 'phase'),
  f('type_data', 'restarts'),
];
/** Paths whose values are scalars or arrays of numbers: jsonb's order of those is what the oracle knows. */
const SORTABLE_JSON = [
  f('raw_data', 'spec', 'replicas'),
  f('raw_data', 'spec', 'image'),
  f('raw_data', 'metadata', 'labels', 'app'),
  f('raw_data', 'status', 'ready'),
  f('raw_data', 'ports'),
  f('raw_data', 'ports', '0'),
  f('raw_data', 'count'),
  f('type_data', 'restarts'),
];
const NUMERIC = [
  f('raw_data', 'spec', 'replicas'),
  f('raw_data', 'count'),
  f('raw_data', 'ports', '0'),
  f('type_data', 'restarts'),
  f('source_id'),
];
const GROUPABLE = [
  ...['name', 'namespace', 'ci_type', 'status', 'scope_id', 'source_id', 'created_at'].map((n) => f(n)),
  f('raw_data', 'spec', 'replicas'),
  f('raw_data', 'metadata', 'labels', 'app'),
  f('raw_data', 'status', 'ready'),
  f('raw_data', 'spec', 'template'),
  f('raw_data', 'ports'),
];
const STATUSES = ['active', 'inactive', 'archived'];

/** `arb` in `percent` of the draws, null in the others. */
const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | null> =>
  fc.oneof({ arbitrary: fc.constant(null), weight: 100 - percent }, { arbitrary: arb, weight: percent });

const word = (text: string): GValue => ({ t: 'word', text });
const quoted = (text: string): GValue => ({ t: 'quoted', text });
const num = (text: string): GValue => ({ t: 'number', text });

/** Written bare only where the grammar reads it as a word (not a number, a time or a keyword). */
const bare = (text: string) => /^[A-Za-z][A-Za-z0-9_.:/@+-]*$/.test(text) && !/^(and|or|now.*)$/i.test(text);

const wordOrQuoted = (texts: readonly string[]) =>
  fc.tuple(fc.constantFrom(...texts), fc.boolean()).map(([text, q]) => (q || !bare(text) ? quoted(text) : word(text)));

const HOURS = [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6];
export const momentArb = fc.constantFrom(...HOURS);

const timeArb: fc.Arbitrary<GValue> = fc.oneof(
  fc
    .constantFrom('now', 'now-1h', 'now-2h', 'now-90m', 'now-3h', 'now-1d', 'now+1h', 'NOW-30m')
    .map((text) => ({ t: 'time' as const, text })),
  fc
    .tuple(momentArb, fc.boolean())
    .map(([h, q]) => ({ t: 'time' as const, text: at(h).toISOString().replace('.000Z', 'Z'), quoted: q })),
  fc
    .constantFrom('2026-10-01', '2026-10-01T03:00:00+02:00', '2026-10-01T02:30:00.000Z')
    .map((text) => ({ t: 'time' as const, text })),
);

/** What a JSON path holds in the estates, as text and as numbers: the values a query compares it with. */
const JSON_SAMPLES: Record<string, { texts: string[]; numbers: string[] }> = {
  'raw_data.spec.replicas': { texts: ['3', '10'], numbers: ['0', '1', '2', '3', '5', '10', '2.5', '-1', '1e1'] },
  'raw_data.spec.image': { texts: IMAGES, numbers: [] },
  'raw_data.spec.template': { texts: ['{"env": "dev"', 'web:1', '"image": "app:1"}'], numbers: [] },
  'raw_data.spec.template.image': { texts: IMAGES, numbers: [] },
  'raw_data.spec.template.env': { texts: ['prod', 'dev'], numbers: [] },
  'raw_data.spec': { texts: ['{"image"', 'replicas', '{}'], numbers: [] },
  'raw_data.metadata.labels.app': { texts: LABELS, numbers: [] },
  'raw_data.metadata.labels.tier': { texts: ['front', 'back'], numbers: [] },
  'raw_data.metadata.labels.app.io/name': { texts: ['checkout', 'cart'], numbers: [] },
  'raw_data.status.ready': { texts: ['true', 'false'], numbers: [] },
  'raw_data.status.phase': { texts: ['Running', 'Pending'], numbers: [] },
  'raw_data.ports': { texts: ['[80', '443]', '[]', '[80, 443]'], numbers: ['80'] },
  'raw_data.ports.0': { texts: ['80', '443'], numbers: ['80', '443', '100'] },
  'raw_data.ports.1': { texts: ['443', '80'], numbers: ['443', '80'] },
  'raw_data.count': { texts: ['x', 'true', '7'], numbers: ['0', '7', '9', '10', '-3', '8'] },
  'raw_data.nothing.here': { texts: ['x'], numbers: ['1'] },
  'type_data.phase': { texts: ['Running', 'Pending', 'Failed'], numbers: [] },
  'type_data.restarts': { texts: ['1', '2'], numbers: ['0', '1', '2', '3'] },
};

const COLUMN_SAMPLES: Record<string, string[]> = {
  name: [...NAMES, 'zzz', 'WEB'],
  namespace: [...NAMESPACES, 'none'],
  ci_type: [...CI_TYPES, 'k8s.job'],
  status: STATUSES,
  scope_id: ['east', 'west', 'north'],
  external_id: CI_TYPES.flatMap((t) => [`${t}/1`, `${t}/12`, `${t}/3`]),
};

/** The texts a field holds (for text matches and text comparisons). */
const textsOf = (field: GField) =>
  field.name === 'raw_data' || field.name === 'type_data'
    ? JSON_SAMPLES[[field.name, ...field.path].join('.')]!.texts
    : COLUMN_SAMPLES[field.name]!;

function jsonValueFor(field: GField): fc.Arbitrary<GValue> {
  const samples = JSON_SAMPLES[[field.name, ...field.path].join('.')]!;
  const numbers = samples.numbers.length > 0 ? samples.numbers : ['1', '3'];
  return fc.oneof(
    { arbitrary: fc.constantFrom(...numbers).map(num), weight: samples.numbers.length > 0 ? 4 : 1 },
    { arbitrary: wordOrQuoted(samples.texts), weight: 4 },
    { arbitrary: fc.constantFrom('true', 'false', 'null').map(word), weight: 1 },
  );
}

function valueFor(field: GField): fc.Arbitrary<GValue> {
  switch (field.name) {
    case 'status':
      return wordOrQuoted(STATUSES);
    case 'external_id':
      return fc.constantFrom(...COLUMN_SAMPLES.external_id!).map(word);
    case 'ci_id':
      return fc.tuple(fc.nat(59), fc.boolean()).map(([index, q]) => ({ t: 'ci' as const, index, quoted: q }));
    case 'source_id':
      return fc.oneof(
        { arbitrary: fc.constantFrom(0, 1).map((index) => ({ t: 'source' as const, index })), weight: 4 },
        { arbitrary: fc.constant(num('99')), weight: 1 },
      );
    case 'raw_data':
    case 'type_data':
      return jsonValueFor(field);
    default:
      return COLUMN_SAMPLES[field.name] ? wordOrQuoted(COLUMN_SAMPLES[field.name]!) : timeArb;
  }
}

const SUBSTRINGS = ['_', '%', 'a', '1', 'e', 'p:', 'True'];
const PATTERNS = ['^[a-c]+$', '1|2', '^.{2}$', '^(web|api)$', 'a.*b', 'e[as]', '^[0-9]+$', '^-', '^$'];
const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A piece of what the field holds, sometimes in the other case; or a text found nowhere. */
const substringOf = (field: GField): fc.Arbitrary<string> =>
  fc.oneof(
    {
      arbitrary: fc
        .tuple(fc.constantFrom(...textsOf(field)), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 3 }))
        .map(([text, a, b, kase]) => {
          const from = a % text.length;
          const piece = text.slice(from, from + 1 + (b % (text.length - from))) || text;
          return kase === 0 ? piece.toUpperCase() : kase === 1 ? piece.toLowerCase() : piece;
        }),
      weight: 5,
    },
    { arbitrary: fc.constantFrom(...SUBSTRINGS), weight: 1 },
  );

const patternOf = (field: GField): fc.Arbitrary<string> =>
  fc.oneof(
    {
      arbitrary: fc
        .tuple(fc.constantFrom(...textsOf(field)), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 2 }))
        .map(([text, n, form]) =>
          form === 0
            ? `^${escapeRegex(text.slice(0, n))}`
            : form === 1
              ? `${escapeRegex(text.slice(-n))}$`
              : `^${escapeRegex(text)}$`,
        ),
      weight: 3,
    },
    { arbitrary: fc.constantFrom(...PATTERNS), weight: 1 },
  );

/** Comparisons and text matches on the given fields (text matches on those that hold text). */
const comparisonsOn = (fields: GField[], textFields: GField[]): fc.Arbitrary<GExpr> =>
  fc.oneof(
    // columns and paths compared with a value
    fc.constantFrom(...fields).chain((field) =>
      fc.oneof(
        fc.record({
          k: fc.constant('cmp' as const),
          field: fc.constant(field),
          op: fc.constantFrom<CompareOp>('=', '!=', '<', '<=', '>', '>='),
          value: valueFor(field),
        }),
        fc.record({
          k: fc.constant('in' as const),
          field: fc.constant(field),
          values: fc.array(valueFor(field), { minLength: 1, maxLength: 3 }),
          negated: fc.boolean(),
        }),
        fc.record({
          k: fc.constant('exists' as const),
          field: fc.constant(field),
          negated: fc.boolean(),
          form: fc.constantFrom('exists' as const, 'null' as const),
        }),
      ),
    ),
    // text matches on text columns and paths, with pieces of what they hold
    fc
      .tuple(
        fc.constantFrom(...textFields),
        fc.constantFrom<TextOp>('contains', 'icontains', 'starts', 'istarts', 'matches'),
        fc.boolean(),
      )
      .chain(([field, op, tilde]) =>
        (op === 'matches' ? patternOf(field) : substringOf(field)).map((value): GExpr => ({
          k: 'text',
          field,
          op,
          value,
          tilde: op === 'matches' && tilde,
        })),
      ),
  );

const comparisonArb = comparisonsOn(
  [...TEXT_FIELDS, ...JSON_FIELDS, ...TIME_FIELDS, f('ci_id'), f('source_id')],
  [...TEXT_FIELDS, ...JSON_FIELDS],
);

const HISTORY_FIELDS = [
  ...['name', 'namespace', 'status', 'scope_id', 'raw_data', 'type_data'].map((n) => f(n)),
  f('raw_data', 'spec'),
  f('raw_data', 'spec', 'replicas'),
  f('raw_data', 'metadata', 'labels'),
  f('raw_data', 'spec', 'template', 'image'),
  f('type_data', 'phase'),
];

const historyArb: fc.Arbitrary<GExpr> = fc.oneof(
  fc.record({
    k: fc.constant('changed' as const),
    field: sometimes(fc.constantFrom(...HISTORY_FIELDS), 50),
    since: sometimes(timeArb, 70),
    until: sometimes(timeArb, 25),
    types: sometimes(fc.subarray(['CREATED', 'UPDATED', 'DELETED'], { minLength: 1 }), 30),
  }),
  fc.record({
    k: fc.constantFrom('created' as const, 'archived' as const),
    since: sometimes(timeArb, 70),
    until: sometimes(timeArb, 25),
  }),
);

const exprArb: fc.Arbitrary<GExpr> = fc.letrec<{ expr: GExpr }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: comparisonArb, weight: 6 },
    { arbitrary: historyArb, weight: 2 },
    { arbitrary: fc.constant<GExpr>({ k: 'any' }), weight: 2 },
    {
      arbitrary: fc.record({
        k: fc.constantFrom('and' as const, 'or' as const, 'or' as const, 'or' as const),
        items: fc.array(tie('expr'), { minLength: 2, maxLength: 3 }),
      }),
      weight: 2,
    },
    { arbitrary: fc.record({ k: fc.constant('not' as const), e: tie('expr') }), weight: 1 },
  ),
})).expr;

/** A status the match names often enough that inactive and archived CIs are matched too. */
const matchArb: fc.Arbitrary<GExpr> = fc.oneof(
  { arbitrary: exprArb, weight: 4 },
  {
    arbitrary: fc.tuple(exprArb, fc.subarray(STATUSES, { minLength: 1 })).map(([e, statuses]): GExpr => ({
      k: 'and',
      items: [e, { k: 'in', field: f('status'), values: statuses.map(word), negated: false }],
    })),
    weight: 1,
  },
);

const hopArb: fc.Arbitrary<GHop> = fc.record({
  k: fc.constant('hop' as const),
  direction: fc.constantFrom('out' as const, 'in' as const, 'both' as const),
  types: sometimes(fc.subarray(RELATIONSHIP_TYPES, { minLength: 1, maxLength: 2 }), 65),
  depth: sometimes(
    fc.oneof(
      fc.integer({ min: 1, max: 3 }).map((n) => ({ min: n, max: n, exact: true })),
      fc
        .integer({ min: 0, max: 2 })
        .chain((min) => fc.integer({ min: Math.max(1, min), max: 3 }).map((max) => ({ min, max, exact: false }))),
    ),
    40,
  ),
});

const sortKeyArb = fc.record({
  field: fc.constantFrom(
    ...[
      'name',
      'namespace',
      'ci_type',
      'status',
      'created_at',
      'updated_at',
      'source_id',
      'scope_id',
      'ci_id',
      'status_updated_at',
    ].map((n) => f(n)),
    ...SORTABLE_JSON,
  ),
  desc: fc.boolean(),
  written: fc.boolean(),
});

const rowPipesArb = (hops: number): fc.Arbitrary<GPipe[]> =>
  fc
    .record({
      sort: sometimes(
        fc.array(sortKeyArb, { minLength: 1, maxLength: 3 }).map((keys): GPipe => ({ k: 'sort', keys })),
        50,
      ),
      limit: sometimes(
        fc.integer({ min: 1, max: 30 }).map((n): GPipe => ({ k: 'limit', n })),
        30,
      ),
      fields: sometimes(
        fc
          .array(
            fc.constantFrom(
              ...TEXT_FIELDS,
              ...TIME_FIELDS,
              ...JSON_FIELDS,
              f('ci_id'),
              f('source_id'),
              f('raw_data'),
              f('type_data'),
            ),
            { minLength: 1, maxLength: 4 },
          )
          .map((fields): GPipe => ({ k: 'fields', fields })),
        40,
      ),
      changes: sometimes(fc.constant<GPipe>({ k: 'with_changes' }), 25),
      ret:
        hops > 0
          ? sometimes(fc.constantFrom<GPipe>({ k: 'return', which: 'first' }, { k: 'return', which: 'last' }), 35)
          : fc.constant(null),
    })
    .map((p) => [p.sort, p.limit, p.fields, p.changes, p.ret].filter((x): x is GPipe => x !== null));

/** Mostly one or two groups: `count` alone answers one number. */
const groupsArb = fc.oneof(
  { arbitrary: fc.constant<GField[]>([]), weight: 1 },
  { arbitrary: fc.array(fc.constantFrom(...GROUPABLE), { minLength: 1, maxLength: 2 }), weight: 4 },
);

const aggregatePipesArb = (hops: number): fc.Arbitrary<GPipe[]> =>
  fc
    .record({
      agg: fc.oneof(
        groupsArb.map((by): GPipe => ({ k: 'count', by })),
        fc.record({
          k: fc.constant('agg' as const),
          fn: fc.constantFrom('min' as const, 'max' as const, 'sum' as const, 'avg' as const),
          field: fc.constantFrom(...NUMERIC),
          by: groupsArb,
        }),
      ),
      ret: hops > 0 ? sometimes(fc.constant<GPipe>({ k: 'return', which: 'first' }), 30) : fc.constant(null),
    })
    .map((p) => [p.agg, p.ret].filter((x): x is GPipe => x !== null));

/** Distinct group fields: the same field twice groups the same. */
const distinctBy = (pipes: GPipe[]): GPipe[] =>
  pipes.map((p) =>
    p.k === 'count' || p.k === 'agg'
      ? {
          ...p,
          by: p.by.filter(
            (g, i) => p.by.findIndex((o) => o.name === g.name && o.path.join('.') === g.path.join('.')) === i,
          ),
        }
      : p,
  );

export const queryArb: fc.Arbitrary<GQuery> = fc
  .record({
    first: matchArb,
    rest: fc.oneof(
      ...[45, 35, 15, 5].map((weight, hops) => ({
        arbitrary: fc.array(fc.tuple(hopArb, sometimes(matchArb, 55)), { minLength: hops, maxLength: hops }),
        weight,
      })),
    ),
    aggregate: fc.oneof({ arbitrary: fc.constant(true), weight: 35 }, { arbitrary: fc.constant(false), weight: 65 }),
    keywordCase: fc.constantFrom('lower' as const, 'upper' as const, 'capital' as const),
    asOf: sometimes(momentArb, 30),
    compareTo: sometimes(momentArb, 15),
    order: fc.integer({ min: 0, max: 1000 }),
  })
  .chain((q) =>
    (q.aggregate ? aggregatePipesArb(q.rest.length) : rowPipesArb(q.rest.length)).map((pipes): GQuery => ({
      path: [q.first, ...q.rest.flat()],
      // the pipes in any order: the grammar takes them so
      pipes: distinctBy(pipes.map((_, i) => pipes[(i + q.order) % pipes.length]!)),
      asOf: q.asOf,
      compareTo: q.compareTo,
      keywordCase: q.keywordCase,
    })),
  );

export { JSON_FIELDS, TEXT_FIELDS, TIME_FIELDS };

/** The columns the write path keeps counts by: a count of a match on them alone reads those counts. */
const COUNTED = ['ci_type', 'namespace', 'status', 'scope_id', 'source_id'].map((n) => f(n));

const countedExprArb: fc.Arbitrary<GExpr> = fc.letrec<{ expr: GExpr }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: comparisonsOn(COUNTED, COUNTED.slice(0, 4)), weight: 6 },
    { arbitrary: fc.constant<GExpr>({ k: 'any' }), weight: 2 },
    {
      arbitrary: fc.record({
        k: fc.constantFrom('and' as const, 'or' as const),
        items: fc.array(tie('expr'), { minLength: 2, maxLength: 3 }),
      }),
      weight: 2,
    },
    { arbitrary: fc.record({ k: fc.constant('not' as const), e: tie('expr') }), weight: 1 },
  ),
})).expr;

/** `count` and `count by` of the present inventory matched on counted columns alone. */
export const countedQueryArb: fc.Arbitrary<GQuery> = fc
  .record({
    first: countedExprArb,
    by: fc.subarray(COUNTED, { maxLength: 2 }),
    keywordCase: fc.constantFrom('lower' as const, 'upper' as const, 'capital' as const),
  })
  .map(({ first, by, keywordCase }) => ({
    path: [first],
    pipes: [{ k: 'count', by }],
    asOf: null,
    compareTo: null,
    keywordCase,
  }));
