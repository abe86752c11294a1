import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Sql } from '../../../src/platform/db/database.js';
import { asJson } from '../../../src/platform/db/database.js';
import { backfillSearchDocuments } from '../../../src/history/search/backfill.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';

interface FieldChange {
  field: string;
  old_value: unknown;
  new_value: unknown;
}
interface ChangeItem {
  id: string;
  ci_id: string;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  changed_at: string;
  change_type: string;
  changes: FieldChange[];
}
interface ChangeList {
  items: ChangeItem[];
  total: number;
  limit: number;
  offset: number;
}

interface Seed {
  label: string;
  ci: string;
  name: string;
  namespace: string | null;
  type: string;
  kind: 'CREATED' | 'UPDATED' | 'DELETED';
  at: string;
  scope: 'a1' | 'a2' | 'b';
  changes: FieldChange[];
}

const before = [{ type: 'Ready', status: 'True' }];
const after = [
  { type: 'Ready', status: 'False', reason: 'CrashLoopBackOff' },
  { type: 'PodScheduled', status: 'True' },
];
const ALPHA = randomUUID();

/** Six change records over two sources and three instances; `r6` has no field changes. */
const SEEDS: Seed[] = [
  {
    label: 'r1',
    ci: ALPHA,
    name: 'alpha',
    namespace: 'default',
    type: 'k8s.pod',
    kind: 'CREATED',
    at: '2026-01-01T09:00:00Z',
    scope: 'a1',
    changes: [{ field: 'status', old_value: null, new_value: 'active' }],
  },
  {
    label: 'r2',
    ci: randomUUID(),
    name: 'bravo',
    namespace: null,
    type: 'k8s.node',
    kind: 'UPDATED',
    at: '2026-01-01T10:00:00Z',
    scope: 'a1',
    changes: [
      { field: 'raw_data.spec.replicas', old_value: 1, new_value: 2 },
      { field: 'raw_data.status.conditions', old_value: before, new_value: after },
    ],
  },
  {
    label: 'r3',
    ci: randomUUID(),
    name: 'charlie',
    namespace: 'monitoring',
    type: 'prom.target',
    kind: 'UPDATED',
    at: '2026-01-01T10:00:00Z',
    scope: 'a1',
    changes: [{ field: 'raw_data.metadata.labels', old_value: { app: 'a' }, new_value: { app: 'b', tier: 'web' } }],
  },
  {
    label: 'r4',
    ci: ALPHA,
    name: 'alpha',
    namespace: 'default',
    type: 'k8s.pod',
    kind: 'DELETED',
    at: '2026-01-02T00:00:00Z',
    scope: 'a2',
    changes: [{ field: 'status', old_value: 'active', new_value: 'archived' }],
  },
  {
    label: 'r5',
    ci: randomUUID(),
    name: 'delta',
    namespace: null,
    type: 'k8s.node',
    kind: 'UPDATED',
    at: '2026-01-01T11:30:00Z',
    scope: 'b',
    changes: [{ field: 'raw_data.spec.taints', old_value: [{ key: 'gpu', effect: 'NoSchedule' }], new_value: [] }],
  },
  {
    label: 'r6',
    ci: randomUUID(),
    name: 'bravo',
    namespace: null,
    type: 'k8s.node',
    kind: 'UPDATED',
    at: '2026-01-01T12:00:00Z',
    scope: 'a1',
    changes: [],
  },
];

interface Sources {
  a: string;
  b: string;
}

/** Inserts the seeds one by one (ids follow the list order); returns change id -> label. */
async function seed(sql: Sql, sources: Sources): Promise<Map<string, string>> {
  const labels = new Map<string, string>();
  for (const s of SEEDS) {
    const [row] = await sql<{ id: string }[]>`
      insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
      values (${DEFAULT_TENANT_ID}, ${s.ci}, ${s.scope === 'b' ? sources.b : sources.a}, ${s.scope === 'b' ? null : s.scope}, ${s.name},
              ${s.namespace}, ${s.type}, ${s.kind}, ${s.at}::text::timestamptz, ${sql.json(asJson(s.changes))}::jsonb,
              ${[...new Set(s.changes.map((c) => c.field))].sort()}::text[])
      returning id::text`;
    labels.set(row!.id, s.label);
  }
  // records inserted by hand get their search documents the way older records do, and enter the
  // statistics queue as the writer's do
  await backfillSearchDocuments(sql);
  await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records`;
  return labels;
}

describe('GET /api/v1/changes (JSON)', () => {
  const app = useTestApp();
  let admin: string;
  let sources: Sources;
  let labelOf: Map<string, string>;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    sources = {
      a: await buildSource(app.current.sql, 'k8s-prod'),
      b: await buildSource(app.current.sql, 'prom-main', 'prometheus'),
    };
    labelOf = await seed(app.current.sql, sources);
  });

  async function list(query: string, key = admin): Promise<ChangeList> {
    const reply = await app.current.get<ChangeList>(`/api/v1/changes?${query}`, key);
    expect(reply.status, `${query}: ${reply.text}`).to.equal(200);
    return reply.body;
  }
  const labels = (body: ChangeList) => body.items.map((i) => labelOf.get(i.id));
  const matching = async (query: string, key = admin) => [...labels(await list(query, key))].sort();

  it('lists change records shaped as the spec shows them, newest first, leaving out records without field changes', async () => {
    const body = await list('');
    expect(body).to.include({ total: 5, limit: 100, offset: 0 });
    expect(labels(body)).to.deep.equal(['r4', 'r5', 'r3', 'r2', 'r1']);
    const r2 = body.items.find((i) => labelOf.get(i.id) === 'r2')!;
    expect(r2).to.deep.equal({
      id: r2.id,
      ci_id: SEEDS[1]!.ci,
      ci_name: 'bravo',
      ci_namespace: null,
      ci_type: 'k8s.node',
      changed_at: '2026-01-01T10:00:00.000Z',
      change_type: 'UPDATED',
      // written by hand as records before classification were: no re-application has reached them
      kind: null,
      severity: null,
      changes: SEEDS[1]!.changes,
    });
    expect(r2.id).to.match(/^\d+$/);
    expect(r2.changes[1]!.new_value).to.be.an('array').that.deep.equals(after);
  });

  it('pages by limit and offset', async () => {
    const page = await list('limit=2&offset=1');
    expect(page).to.include({ total: 5, limit: 2, offset: 1 });
    expect(labels(page)).to.deep.equal(['r5', 'r3']);
    for (const query of ['limit=1001', 'limit=0', 'offset=-1']) {
      const reply = await app.current.get(`/api/v1/changes?${query}`, admin);
      expect(reply.status, query).to.equal(422);
      expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
    }
    expect((await list('limit=1000')).items).to.have.lengthOf(5);
  });

  it('filters on every declared field, including changed fields and timestamps with colons', async () => {
    const cases: [string[], string[]][] = [
      [['change_type:eq:UPDATED'], ['r2', 'r3', 'r5']],
      [['change_type:in:CREATED,DELETED'], ['r1', 'r4']],
      [['ci_type:eq:k8s.node'], ['r2', 'r5']],
      [['ci_type:startswith:k8s.'], ['r1', 'r2', 'r4', 'r5']],
      [['ci_name:ilike:ALP'], ['r1', 'r4']],
      [['ci_name:nin:alpha,bravo'], ['r3', 'r5']],
      [['changed_at:gte:2026-01-01T10:00:00Z'], ['r2', 'r3', 'r4', 'r5']],
      [['changed_at:lt:2026-01-01T10:00:00Z'], ['r1']],
      [['changed_at:gt:2026-01-01T10:00:00Z', 'changed_at:lte:2026-01-01T11:30:00Z'], ['r5']],
      [[`ci_id:eq:${ALPHA}`], ['r1', 'r4']],
      [['changed_field:startswith:raw_data.spec'], ['r2', 'r5']],
      [['changed_field:eq:status'], ['r1', 'r4']],
      [['changed_field:in:status,raw_data.metadata.labels'], ['r1', 'r3', 'r4']],
      [['changed_field:ne:status'], ['r2', 'r3', 'r5']],
      [['changed_field:nin:status,raw_data.spec.replicas'], ['r3', 'r5']],
      [['changed_field:like:conditions'], ['r2']],
      [['changed_field:ilike:TAINTS'], ['r5']],
      [['changed_field:gte:raw_data.status'], ['r1', 'r2', 'r4']],
      [['changed_field:notnull'], ['r1', 'r2', 'r3', 'r4', 'r5']],
      [['changed_field:null'], []],
      [
        ['change_type:eq:UPDATED', 'changed_field:startswith:raw_data.spec'],
        ['r2', 'r5'],
      ],
    ];
    for (const [filters, expected] of cases) {
      const query = filters.map((f) => `filter=${encodeURIComponent(f)}`).join('&');
      expect(await matching(query), filters.join(' & ')).to.deep.equal(expected);
    }
  });

  it('rejects unknown filter fields, operators and values with INVALID_FILTER', async () => {
    for (const filter of [
      'status:eq:active',
      'change_type:eq:ARCHIVED',
      'changed_at:gte:yesterday',
      'ci_id:eq:42',
      'ci_name:regex:a',
      'changed_at:like:2026',
    ]) {
      const reply = await app.current.get(`/api/v1/changes?filter=${encodeURIComponent(filter)}`, admin);
      expect(reply.status, filter).to.equal(400);
      expect(reply.body.error).to.include({ code: 'INVALID_FILTER' });
      expect(reply.body.error.details.filter).to.equal(filter);
    }
  });

  it('bounds by start_date and end_date, a date meaning the whole UTC day', async () => {
    expect(await matching('start_date=2026-01-01T10:00:00Z')).to.deep.equal(['r2', 'r3', 'r4', 'r5']);
    expect(await matching('end_date=2026-01-01T10:00:00Z')).to.deep.equal(['r1', 'r2', 'r3']);
    expect(await matching('start_date=2026-01-01&end_date=2026-01-01')).to.deep.equal(['r1', 'r2', 'r3', 'r5']);
    expect(await matching(`start_date=${encodeURIComponent('2026-01-01T11:00:00+01:00')}`)).to.deep.equal([
      'r2',
      'r3',
      'r4',
      'r5',
    ]);
    expect(await matching('start_date=2026-01-01T10:00:00.000001Z')).to.deep.equal(['r4', 'r5']);
    expect(await matching('start_date=2026-01-02T00:00:00Z&end_date=2026-01-02T00:00:00Z')).to.deep.equal(['r4']);
  });

  it('answers malformed or reversed dates with VALIDATION_ERROR naming the parameter', async () => {
    for (const [query, field] of [
      ['start_date=yesterday', 'start_date'],
      ['end_date=2026-13-01', 'end_date'],
      ['start_date=2026-01-01T25:00:00Z', 'start_date'],
      ['start_date=2026-01-02&end_date=2026-01-01T12:00:00Z', 'end_date'],
    ]) {
      const reply = await app.current.get(`/api/v1/changes?${query}`, admin);
      expect(reply.status, query).to.equal(422);
      expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
      expect(reply.body.error.details.errors.map((e: { field: string }) => e.field)).to.include(field);
    }
  });

  it('sorts by every sort field in both orders, ties broken by id in the same direction', async () => {
    const live = SEEDS.filter((s) => s.changes.length > 0).map((s, i) => ({ ...s, order: i }));
    const value: Record<string, (s: Seed) => string> = {
      changed_at: (s) => s.at,
      ci_name: (s) => s.name,
      ci_type: (s) => s.type,
      change_type: (s) => s.kind,
    };
    for (const field of Object.keys(value)) {
      for (const order of ['asc', 'desc'] as const) {
        const sign = order === 'asc' ? 1 : -1;
        const expected = [...live]
          .sort(
            (x, y) =>
              sign *
              (value[field]!(x) < value[field]!(y) ? -1 : value[field]!(x) > value[field]!(y) ? 1 : x.order - y.order),
          )
          .map((s) => s.label);
        expect(labels(await list(`sort_by=${field}&sort_order=${order}`)), `${field} ${order}`).to.deep.equal(expected);
      }
    }
    const bad = await app.current.get('/api/v1/changes?sort_by=ci_namespace', admin);
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('VALIDATION_ERROR');
    expect(bad.body.error.details.errors[0].field).to.equal('sort_by');
    expect((await app.current.get('/api/v1/changes?sort_order=up', admin)).status).to.equal(422);
  });

  it('searches CI names, namespaces, types, changed field paths and their segments, and values', async () => {
    const cases: [string, string[]][] = [
      ['alpha', ['r1', 'r4']],
      ['alp', ['r1', 'r4']],
      ['ALPHA', ['r1', 'r4']],
      ['monit', ['r3']],
      ['raw_data.spec', ['r2', 'r5']],
      ['raw_data.status.conditions', ['r2']],
      ['bravo replicas', ['r2']],
      ['replicas', ['r2']],
      ['taints', ['r5']],
      ['conditions', ['r2']],
      ['bravo raw_data.spec', ['r2']],
      ['alpha or charlie', ['r1', 'r3', 'r4']],
      ['k8s -alpha', ['r2', 'r5']],
      ['k8s.node', ['r2', 'r5']],
      ['gpu', ['r5']],
      ['noschedule', ['r5']],
      ['tier', []],
      ['web', ['r3']],
      ['"activ"', []],
      ['activ', ['r1', 'r4']],
      ['"raw_data.spec.taints"', ['r5']],
      ['-', []],
      ['zzz', []],
    ];
    for (const [search, expected] of cases) {
      expect(await matching(`search=${encodeURIComponent(search)}`), search).to.deep.equal(expected);
    }
    expect(await matching(`search=alpha&filter=${encodeURIComponent('change_type:eq:DELETED')}`)).to.deep.equal(['r4']);
  });

  it('finds real reconciled changes by the paths the reconciler records', async () => {
    await app.current.sql`truncate change_records`;
    const pod = buildPod({ name: 'web-7f9c4', replicas: 1 });
    await ingest(app.current.sql, [pod], { now: new Date('2026-02-01T00:00:00Z') });
    await ingest(app.current.sql, [buildPod({ name: 'web-7f9c4', replicas: 4, external_id: pod.external_id })], {
      now: new Date('2026-02-01T01:00:00Z'),
    });
    const spec = await list(`filter=${encodeURIComponent('changed_field:startswith:raw_data.spec')}`);
    expect(spec.total).to.equal(1);
    expect(spec.items[0]!.changes.find((c) => c.field === 'raw_data.spec.replicas')).to.deep.equal({
      field: 'raw_data.spec.replicas',
      old_value: 1,
      new_value: 4,
    });
    expect((await list('search=web-7f')).total).to.equal(2);
  });

  describe('data scopes and access', () => {
    it("lists only changes recorded in the key's sources and instances", async () => {
      const scoped = async (scopes: { sourceId: string; scopeId: string | null }[]) =>
        createKey(app.current.sql, 'svc', { permissions: ['changes:read'], scopes });
      expect(await matching('', await scoped([{ sourceId: sources.a, scopeId: 'a1' }]))).to.deep.equal([
        'r1',
        'r2',
        'r3',
      ]);
      expect(await matching('', await scoped([{ sourceId: sources.a, scopeId: null }]))).to.deep.equal([
        'r1',
        'r2',
        'r3',
        'r4',
      ]);
      const b = await scoped([{ sourceId: sources.b, scopeId: null }]);
      expect(await matching('', b)).to.deep.equal(['r5']);
      expect(await matching(`filter=${encodeURIComponent(`ci_id:eq:${ALPHA}`)}`, b)).to.deep.equal([]);
      expect(await matching('search=alpha', b)).to.deep.equal([]);
      expect((await list('', b)).total).to.equal(1);
      expect(await matching('', await scoped([]))).to.deep.equal([]);
    });

    it('needs a key with read on changes', async () => {
      const anonymous = await app.current.get('/api/v1/changes');
      expect(anonymous.status).to.equal(401);
      expect(anonymous.body.error.code).to.equal('HTTP_401');
      const ciReader = await createKey(app.current.sql, 'svc', { permissions: ['configuration_items:read'] });
      const denied = await app.current.get('/api/v1/changes', ciReader);
      expect(denied.status).to.equal(403);
      const readOnly = await createKey(app.current.sql, 'ro');
      expect((await list('', readOnly)).total).to.equal(5);
    });
  });
});
