import { expect } from 'chai';
import { sweepLifecycle } from '../../../src/inventory/lifecycle/sweep.js';
import { createKey } from '../../support/app.js';
import { buildPod, ingest } from '../../support/factories.js';
import { useSeededApp } from '../../support/seeded-app.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (hours: number) => new Date(T0 + hours * 3_600_000);

/**
 * Four CIs with known fields:
 *   alpha  prod     k8s.pod         replicas 3    app "Web"  created 01:00 updated 01:00  seen 06:00  active
 *   Beta   staging  k8s.deployment  replicas 10   app "db"   created 02:00 updated 05:00  seen 06:00  active
 *   gamma% (null)   k8s.node        (no replicas) app "web"  created 03:00 updated 03:00  seen 06:00  active
 *   delta  prod     k8s.pod         replicas "7"  (no app)   created 03:00 updated +1d04h seen 03:00  inactive
 */
function records() {
  const pod = (
    name: string,
    namespace: string | null,
    ciType: string,
    spec: Record<string, unknown>,
    labels: Record<string, string>,
  ) =>
    buildPod({
      name,
      namespace,
      ci_type: ciType,
      external_id: `x/${name}`,
      raw_data: { metadata: { name, labels }, spec },
    });
  return {
    alpha: pod('alpha-web', 'prod', 'k8s.pod', { replicas: 3 }, { app: 'Web' }),
    beta: pod('Beta-db', 'staging', 'k8s.deployment', { replicas: 2 }, { app: 'db' }),
    betaUpdated: pod('Beta-db', 'staging', 'k8s.deployment', { replicas: 10 }, { app: 'db' }),
    gamma: pod('gamma_web%', null, 'k8s.node', {}, { app: 'web' }),
    delta: pod('delta', 'prod', 'k8s.pod', { replicas: '7' }, {}),
  };
}

describe('GET /api/v1/configuration-items', () => {
  let key: string;
  // the four CIs are seeded once: the tests read them, and the two that add to them are seeded again
  const app = useSeededApp(async ({ sql }) => {
    key = await createKey(sql, 'ro');
    const r = records();
    await ingest(sql, [r.alpha], { now: at(1) });
    await ingest(sql, [r.alpha, r.beta], { now: at(2) });
    await ingest(sql, [r.alpha, r.beta, r.gamma, r.delta], { now: at(3) });
    await ingest(sql, [r.alpha, r.betaUpdated, r.gamma], { now: at(5) });
    await ingest(sql, [r.alpha, r.betaUpdated, r.gamma], { now: at(6) });
    await sweepLifecycle(
      sql,
      {
        inactiveAfterMs: 24 * 3_600_000,
        archiveInactiveAfterMs: 7 * 86_400_000,
        archiveRetentionMs: 7 * 86_400_000,
        batchSize: 100,
      },
      at(28),
    );
  });

  const names = async (query: string): Promise<string[]> => {
    const reply = await app.current.get(`/api/v1/configuration-items?status=all&limit=1000&${query}`, key);
    expect(reply.status, `${query}: ${reply.text}`).to.equal(200);
    return (reply.body.items as { name: string }[]).map((i) => i.name).sort();
  };

  const ALL = ['Beta-db', 'alpha-web', 'delta', 'gamma_web%'];
  const cases: [string, string[]][] = [
    // name (text)
    ['name:eq:delta', ['delta']],
    ['name:ne:delta', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['name:gt:c', ['delta', 'gamma_web%']],
    ['name:gte:delta', ['delta', 'gamma_web%']],
    ['name:lt:c', ['Beta-db', 'alpha-web']],
    ['name:lte:delta', ['Beta-db', 'alpha-web', 'delta']],
    ['name:like:web', ['alpha-web', 'gamma_web%']],
    ['name:like:WEB', []],
    ['name:like:_web%', ['gamma_web%']],
    ['name:ilike:BETA', ['Beta-db']],
    ['name:startswith:gamma_', ['gamma_web%']],
    ['name:startswith:gamma%', []],
    ['name:in:delta,alpha-web,nope', ['alpha-web', 'delta']],
    ['name:nin:delta,alpha-web', ['Beta-db', 'gamma_web%']],
    ['name:null', []],
    ['name:notnull', ALL],
    // namespace (nullable text)
    ['namespace:eq:prod', ['alpha-web', 'delta']],
    ['namespace:ne:prod', ['Beta-db', 'gamma_web%']],
    ['namespace:gt:prod', ['Beta-db']],
    ['namespace:gte:prod', ['Beta-db', 'alpha-web', 'delta']],
    ['namespace:lt:staging', ['alpha-web', 'delta']],
    ['namespace:lte:staging', ['Beta-db', 'alpha-web', 'delta']],
    ['namespace:like:rod', ['alpha-web', 'delta']],
    ['namespace:ilike:STAG', ['Beta-db']],
    ['namespace:startswith:sta', ['Beta-db']],
    ['namespace:in:prod,staging', ['Beta-db', 'alpha-web', 'delta']],
    ['namespace:nin:prod', ['Beta-db', 'gamma_web%']],
    ['namespace:null', ['gamma_web%']],
    ['namespace:notnull', ['Beta-db', 'alpha-web', 'delta']],
    // status (enumeration)
    ['status:eq:inactive', ['delta']],
    ['status:ne:inactive', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['status:gt:archived', ['delta']],
    ['status:gte:inactive', ['delta']],
    ['status:lt:inactive', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['status:lte:active', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['status:like:ctiv', ALL],
    ['status:ilike:INACT', ['delta']],
    ['status:startswith:in', ['delta']],
    ['status:in:inactive,archived', ['delta']],
    ['status:nin:inactive', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['status:null', []],
    ['status:notnull', ALL],
    // ci_type
    ['ci_type:eq:k8s.pod', ['alpha-web', 'delta']],
    ['ci_type:ne:k8s.pod', ['Beta-db', 'gamma_web%']],
    ['ci_type:gt:k8s.node', ['alpha-web', 'delta']],
    ['ci_type:gte:k8s.node', ['alpha-web', 'delta', 'gamma_web%']],
    ['ci_type:lt:k8s.node', ['Beta-db']],
    ['ci_type:lte:k8s.deployment', ['Beta-db']],
    ['ci_type:like:.po', ['alpha-web', 'delta']],
    ['ci_type:ilike:NODE', ['gamma_web%']],
    ['ci_type:startswith:k8s.d', ['Beta-db']],
    ['ci_type:in:k8s.node,k8s.deployment', ['Beta-db', 'gamma_web%']],
    ['ci_type:nin:k8s.pod', ['Beta-db', 'gamma_web%']],
    ['ci_type:null', []],
    ['ci_type:notnull', ALL],
    // timestamps: values contain colons, only the first two split
    ['created_at:eq:2026-01-01T02:00:00Z', ['Beta-db']],
    ['created_at:eq:2026-01-01T02:00:00+00:00', ['Beta-db']],
    ['created_at:ne:2026-01-01T03:00:00.000Z', ['Beta-db', 'alpha-web']],
    ['created_at:gt:2026-01-01T01:30:00Z', ['Beta-db', 'delta', 'gamma_web%']],
    ['created_at:gte:2026-01-01T03:00:00Z', ['delta', 'gamma_web%']],
    ['created_at:lt:2026-01-01T02:00:00Z', ['alpha-web']],
    ['created_at:lte:2026-01-01T02:00:00Z', ['Beta-db', 'alpha-web']],
    ['created_at:in:2026-01-01T01:00:00Z,2026-01-01T03:00:00Z', ['alpha-web', 'delta', 'gamma_web%']],
    ['created_at:nin:2026-01-01T03:00:00Z', ['Beta-db', 'alpha-web']],
    ['created_at:null', []],
    ['created_at:notnull', ALL],
    ['updated_at:eq:2026-01-01T05:00:00Z', ['Beta-db']],
    ['updated_at:gt:2026-01-01T04:00:00Z', ['Beta-db', 'delta']],
    ['updated_at:lte:2026-01-01T03:00:00Z', ['alpha-web', 'gamma_web%']],
    ['updated_at:ne:2026-01-02T04:00:00Z', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['updated_at:gte:2026-01-02', ['delta']],
    ['updated_at:lt:2026-01-01T01:00:01Z', ['alpha-web']],
    ['updated_at:in:2026-01-02T04:00:00Z', ['delta']],
    ['updated_at:nin:2026-01-02T04:00:00Z,2026-01-01T05:00:00Z', ['alpha-web', 'gamma_web%']],
    ['updated_at:null', []],
    ['updated_at:notnull', ALL],
    ['last_seen:eq:2026-01-01T03:00:00Z', ['delta']],
    ['last_seen:ne:2026-01-01T03:00:00Z', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['last_seen:gt:2026-01-01T03:00:00Z', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['last_seen:gte:2026-01-01T03:00:00Z', ALL],
    ['last_seen:lt:2026-01-01T06:00:00Z', ['delta']],
    ['last_seen:lte:2026-01-01T06:00:00Z', ALL],
    ['last_seen:in:2026-01-01T06:00:00Z', ['Beta-db', 'alpha-web', 'gamma_web%']],
    ['last_seen:nin:2026-01-01T06:00:00Z', ['delta']],
    ['last_seen:null', []],
    ['last_seen:notnull', ALL],
    // raw_data paths: numbers compare as numbers, strings as text
    ['raw_data.spec.replicas:eq:3', ['alpha-web']],
    ['raw_data.spec.replicas:eq:7', ['delta']],
    ['raw_data.spec.replicas:ne:3', ['Beta-db', 'delta', 'gamma_web%']],
    ['raw_data.spec.replicas:gt:5', ['Beta-db']],
    ['raw_data.spec.replicas:gte:3', ['Beta-db', 'alpha-web']],
    ['raw_data.spec.replicas:lt:5', ['alpha-web']],
    ['raw_data.spec.replicas:lte:10', ['Beta-db', 'alpha-web']],
    ['raw_data.spec.replicas:like:1', ['Beta-db']],
    ['raw_data.spec.replicas:ilike:7', ['delta']],
    ['raw_data.spec.replicas:startswith:1', ['Beta-db']],
    ['raw_data.spec.replicas:in:3,10', ['Beta-db', 'alpha-web']],
    ['raw_data.spec.replicas:nin:3', ['Beta-db', 'delta', 'gamma_web%']],
    ['raw_data.spec.replicas:null', ['gamma_web%']],
    ['raw_data.spec.replicas:notnull', ['Beta-db', 'alpha-web', 'delta']],
    ['raw_data.metadata.labels.app:eq:Web', ['alpha-web']],
    ['raw_data.metadata.labels.app:ilike:WEB', ['alpha-web', 'gamma_web%']],
    ['raw_data.metadata.labels.app:gt:Web', ['Beta-db', 'gamma_web%']],
  ];

  for (const [filter, expected] of cases) {
    it(`filter ${filter}`, async () => {
      expect(await names(`filter=${encodeURIComponent(filter)}`)).to.deep.equal([...expected].sort());
    });
  }

  it('finds by free text: a name, namespace or CI type containing it in any case; % and _ are plain text', async () => {
    expect(await names('q=WEB')).to.deep.equal(['alpha-web', 'gamma_web%']);
    expect(await names('q=%25')).to.deep.equal(['gamma_web%']);
    expect(await names('q=_')).to.deep.equal(['gamma_web%']);
    expect(await names('q=PRO')).to.deep.equal(['alpha-web', 'delta']);
    expect(await names('q=stag')).to.deep.equal(['Beta-db']);
    expect(await names('q=deploy')).to.deep.equal(['Beta-db']);
    expect(await names('q=k8s.n')).to.deep.equal(['gamma_web%']);
    expect(await names('q=db')).to.deep.equal(['Beta-db']);
    expect(await names('q=nothing-like-it')).to.deep.equal([]);
    expect(await names('q=prod&filter=ci_type:eq:k8s.pod&sort_by=name')).to.deep.equal(['alpha-web', 'delta']);
    const counted = await app.current.get('/api/v1/configuration-items?status=all&q=web', key);
    expect(counted.body).to.include({ total: 2, total_exact: true });
    expect((await app.current.get('/api/v1/configuration-items?q=', key)).status).to.equal(422);
  });

  app.writes('says where each listed CI comes from, and narrows to a source or an instance', async () => {
    const { sql } = app.current;
    await ingest(sql, [buildPod({ name: 'elsewhere', external_id: 'x/elsewhere' })], {
      source: 'other',
      scopeId: 'cluster-9',
      now: at(6),
    });
    const [other] = await sql<{ id: string }[]>`select id::text from sources where name = 'other'`;
    const listed = await app.current.get('/api/v1/configuration-items?status=all&limit=1000', key);
    const elsewhere = (listed.body.items as { name: string; source_id: number; scope_id: string | null }[]).find(
      (ci) => ci.name === 'elsewhere',
    )!;
    expect(elsewhere).to.include({ source_id: Number(other!.id), scope_id: 'cluster-9' });
    expect(await names(`source_id=${other!.id}`)).to.deep.equal(['elsewhere']);
    expect(await names('filter=scope_id:eq:cluster-9')).to.deep.equal(['elsewhere']);
    expect(await names('filter=scope_id:null')).to.deep.equal(ALL);
    expect((await app.current.get('/api/v1/configuration-items?source_id=abc', key)).status).to.equal(422);
  });

  it('combines repeated filters with AND', async () => {
    expect(
      await names('filter=namespace:eq:prod&filter=ci_type:eq:k8s.pod&filter=raw_data.spec.replicas:gte:3'),
    ).to.deep.equal(['alpha-web']);
  });

  it('shows active CIs by default and honours the status parameter', async () => {
    const list = async (q: string) =>
      ((await app.current.get(`/api/v1/configuration-items${q}`, key)).body.items as { name: string }[])
        .map((i) => i.name)
        .sort();
    expect(await list('')).to.deep.equal(['Beta-db', 'alpha-web', 'gamma_web%']);
    expect(await list('?status=inactive')).to.deep.equal(['delta']);
    expect(await list('?status=archived')).to.deep.equal([]);
    expect(await list('?status=all')).to.deep.equal(ALL);
    expect(await list('?filter=status:eq:inactive')).to.deep.equal(['delta']);
  });

  it('pages with offset and limit, reporting the total of all matches', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 4; offset += 3) {
      const reply = await app.current.get(
        `/api/v1/configuration-items?status=all&sort_by=name&sort_order=asc&limit=3&offset=${offset}`,
        key,
      );
      expect(reply.body).to.include({ total: 4, offset, limit: 3 });
      seen.push(...(reply.body.items as { name: string }[]).map((i) => i.name));
    }
    expect(seen).to.have.lengthOf(4);
    expect(new Set(seen).size).to.equal(4);
    const beyond = await app.current.get('/api/v1/configuration-items?status=all&offset=10', key);
    expect(beyond.body).to.deep.include({ items: [], total: 4 });
  });

  it('walks by cursor in the order of one full page, for every sort field and order, ties and null namespaces included', async () => {
    for (const field of ['created_at', 'updated_at', 'last_seen', 'name', 'namespace', 'ci_type', 'status']) {
      for (const order of ['asc', 'desc']) {
        const base = `/api/v1/configuration-items?status=all&sort_by=${field}&sort_order=${order}`;
        const whole = ((await app.current.get(base, key)).body.items as { ci_id: string }[]).map((i) => i.ci_id);
        const walked: string[] = [];
        let cursor: string | null = null;
        do {
          const reply = await app.current.get(
            `${base}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            key,
          );
          expect(reply.status, reply.text).to.equal(200);
          expect(reply.body).to.include({ total: 4, offset: 0 });
          walked.push(...(reply.body.items as { ci_id: string }[]).map((i) => i.ci_id));
          expect(reply.body.has_more).to.equal(reply.body.next_cursor !== null);
          cursor = reply.body.next_cursor as string | null;
        } while (cursor && walked.length < 10);
        expect(walked, `${field} ${order}`).to.deep.equal(whole);
      }
    }
  });

  it('refuses a cursor replayed with other filters or sorting, or altered, with a route 422', async () => {
    const first = await app.current.get('/api/v1/configuration-items?status=all&sort_by=name&limit=2', key);
    const cursor = encodeURIComponent(first.body.next_cursor as string);
    const next = await app.current.get(
      `/api/v1/configuration-items?status=all&sort_by=name&limit=50&cursor=${cursor}`,
      key,
    );
    expect(next.body.items).to.have.lengthOf(2);
    expect(next.body).to.include({ has_more: false, next_cursor: null });
    for (const [query, message] of [
      [`status=active&sort_by=name&cursor=${cursor}`, /different filter set/],
      [`status=all&sort_by=name&q=a&cursor=${cursor}`, /different filter set/],
      [`status=all&sort_by=created_at&cursor=${cursor}`, /same sorting/],
      [`status=all&sort_by=name&cursor=${cursor.slice(0, -3)}abc`, /altered/],
    ] as const) {
      const reply = await app.current.get(`/api/v1/configuration-items?${query}`, key);
      expect(reply.status, query).to.equal(422);
      expect(reply.body.error.code).to.equal('HTTP_422');
      expect(reply.body.error.message).to.match(message);
    }
  });

  app.writes(
    "refuses another principal's cursor with a route 422: a scoped key never gets the total of a wider walk",
    async () => {
      const { sql } = app.current;
      await ingest(
        sql,
        ['e1', 'e2', 'e3'].map((name) => buildPod({ name, external_id: `x/${name}` })),
        { source: 'other', scopeId: 'cluster-9', now: at(6) },
      );
      const [other] = await sql<{ id: string }[]>`select id::text from sources where name = 'other'`;
      const scoped = await createKey(sql, 'svc', {
        permissions: ['configuration_items:read'],
        scopes: [{ sourceId: other!.id, scopeId: 'cluster-9' }],
      });
      const wide = await app.current.get('/api/v1/configuration-items?status=all&sort_by=name&limit=1', key);
      const own = await app.current.get('/api/v1/configuration-items?status=all&sort_by=name&limit=1', scoped);
      expect([wide.body.total, own.body.total]).to.deep.equal([7, 3]);

      const replayed = await app.current.get(
        `/api/v1/configuration-items?status=all&sort_by=name&limit=1&cursor=${encodeURIComponent(wide.body.next_cursor)}`,
        scoped,
      );
      expect(replayed.status, replayed.text).to.equal(422);
      expect(replayed.body.error).to.deep.include({ code: 'HTTP_422', details: { reason: 'foreign_cursor' } });
      expect(replayed.body.error.message).to.match(/^Invalid cursor: it was issued to another principal/);
      expect(replayed.body).to.not.have.property('total');
      const back = await app.current.get(
        `/api/v1/configuration-items?status=all&sort_by=name&limit=1&cursor=${encodeURIComponent(own.body.next_cursor)}`,
        key,
      );
      expect(back.status).to.equal(422);
      // each walks on with its own cursor and its own total
      const next = await app.current.get(
        `/api/v1/configuration-items?status=all&sort_by=name&limit=1&cursor=${encodeURIComponent(own.body.next_cursor)}`,
        scoped,
      );
      expect([next.status, next.body.total, next.body.items.map((i: { name: string }) => i.name)]).to.deep.equal([
        200,
        3,
        ['e2'],
      ]);
    },
  );

  it('sorts by every whitelisted field in both orders', async () => {
    const byCreated = (
      await app.current.get('/api/v1/configuration-items?status=all&sort_by=created_at&sort_order=asc', key)
    ).body.items as { created_at: string }[];
    expect(byCreated.map((i) => i.created_at)).to.deep.equal([...byCreated.map((i) => i.created_at)].sort());
    for (const field of ['updated_at', 'last_seen', 'name', 'namespace', 'ci_type', 'status']) {
      const asc = (await app.current.get(`/api/v1/configuration-items?status=all&sort_by=${field}&sort_order=asc`, key))
        .body.items as { ci_id: string }[];
      const desc = (
        await app.current.get(`/api/v1/configuration-items?status=all&sort_by=${field}&sort_order=desc`, key)
      ).body.items as { ci_id: string }[];
      expect(
        asc.map((i) => i.ci_id),
        field,
      ).to.deep.equal(desc.map((i) => i.ci_id).reverse());
    }
    const bad = await app.current.get('/api/v1/configuration-items?sort_by=raw_data', key);
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('VALIDATION_ERROR');
    expect(bad.body.error.details.errors[0].field).to.equal('sort_by');
  });

  it('extracts include_attributes paths from raw_data', async () => {
    const reply = await app.current.get(
      '/api/v1/configuration-items?status=all&filter=name:eq:alpha-web&include_attributes=spec.replicas,metadata.labels.app&include_attributes=raw_data.spec.missing',
      key,
    );
    expect(reply.body.items[0].attributes).to.deep.equal({
      'spec.replicas': 3,
      'metadata.labels.app': 'Web',
      'raw_data.spec.missing': null,
    });
    expect(reply.body.items[0].raw_data).to.deep.equal({
      metadata: { name: 'alpha-web', labels: { app: 'Web' } },
      spec: { replicas: 3 },
    });
  });

  it('returns the type-data shape only together with a ci_type filter', async () => {
    const reply = await app.current.get(
      '/api/v1/configuration-items?filter=ci_type:eq:k8s.pod&include_type_data=true&limit=1&sort_by=name',
      key,
    );
    expect(reply.status).to.equal(200);
    expect(Object.keys(reply.body).sort()).to.deep.equal(['has_more', 'items', 'next_cursor', 'total', 'total_exact']);
    expect(reply.body.total_exact).to.equal(true);
    expect(reply.body).to.include({ total: 1, has_more: false });
    const [item] = reply.body.items;
    expect(Object.keys(item).sort()).to.deep.equal(['attributes', 'id', 'type']);
    expect(item.type).to.equal('k8s.pod');
    expect(item.attributes).to.deep.equal({
      name: 'alpha-web',
      namespace: 'prod',
      pod: { phase: 'Running', restarts: 0 },
    });

    const paged = await app.current.get(
      '/api/v1/configuration-items?status=all&filter=ci_type:eq:k8s.pod&include_type_data=true&limit=1',
      key,
    );
    expect(paged.body).to.include({ total: 2, has_more: true });

    const ignored = await app.current.get('/api/v1/configuration-items?include_type_data=true', key);
    expect(ignored.body).to.include.keys('items', 'total', 'offset', 'limit');
    expect(ignored.body.items[0]).to.include.keys('ci_id', 'raw_data');
  });

  const invalid: [string, RegExp][] = [
    ['name', /field:operator:value/],
    ['name:between:a', /unknown operator "between"/],
    ['color:eq:red', /unknown field "color"/],
    ['name:eq', /needs a value/],
    ['name:eq:', /needs a value/],
    ['namespace:null:x', /takes no value/],
    ['created_at:gt:yesterday', /not an ISO 8601 timestamp/],
    ['created_at:like:2026', /text fields only/],
    ['status:eq:deleted', /not one of active, inactive, archived/],
    ['raw_data..spec:eq:1', /empty segment/],
  ];
  for (const [filter, reason] of invalid) {
    it(`rejects the malformed filter ${filter} with a 400 naming it`, async () => {
      const reply = await app.current.get(`/api/v1/configuration-items?filter=${encodeURIComponent(filter)}`, key);
      expect(reply.status).to.equal(400);
      expect(reply.body.error).to.include({
        code: 'INVALID_FILTER',
        path: '/api/v1/configuration-items',
        method: 'GET',
      });
      expect(reply.body.error.details.filter).to.equal(filter);
      expect(reply.body.error.message).to.match(reason);
    });
  }
});
