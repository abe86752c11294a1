import { expect } from 'chai';
import fc from 'fast-check';
import type { Principal } from '../../../src/platform/auth/principal.js';
import type { Sql } from '../../../src/platform/db/database.js';
import { ciStateAt, type CiState } from '../../../src/history/records/as-of.js';
import { trimChangeHistory } from '../../../src/history/records/retention.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { sweepLifecycle } from '../../../src/inventory/lifecycle/sweep.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { onRealPostgres } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.parse('2026-03-01T00:00:00Z');
/**
 * Histories the property below writes: 12 on the embedded database and 13 on the server, each from a
 * seed of its own, so that a CI run (the suite on both) reads 25 different ones, as many as the
 * server alone wrote when both started from one seed. CINV_AS_OF_RUNS sets the number (`npm run
 * fuzz` writes 100), CINV_AS_OF_SEED replays a reported failure.
 */
const AS_OF_RUNS = Number(process.env.CINV_AS_OF_RUNS ?? (onRealPostgres ? 13 : 12));
const AS_OF_SEED = Number(process.env.CINV_AS_OF_SEED ?? 20261127 + (onRealPostgres ? 1 : 0));
const everything: Principal = {
  tenantId: DEFAULT_TENANT_ID,
  kind: 'api_key',
  id: 'test',
  name: 'test',
  tier: 'adm',
  superadmin: false,
  permissions: new Set(),
  scopes: 'all',
};

/** What one CI is made of: every part can come and go, keys with dots included. */
const content = fc.record(
  {
    name: fc.constantFrom('a', 'b', 'renamed'),
    namespace: fc.constantFrom('default', 'prod', null),
    ci_type: fc.constantFrom('k8s.pod', 'k8s.job'),
    labels: fc.dictionary(
      fc.constantFrom('app', 'app.kubernetes.io/name', 'tier', '__proto__'),
      fc.constantFrom('web', 'db', '1'),
    ),
    replicas: fc.option(fc.integer({ min: 0, max: 3 })),
    containers: fc.array(
      fc.record({ name: fc.constantFrom('app', 'side'), image: fc.constantFrom('nginx:1', 'nginx:2') }),
      { maxLength: 2 },
    ),
    nested: fc.option(fc.record({ deep: fc.option(fc.record({ x: fc.integer({ min: 0, max: 2 }) })) })),
    phase: fc.constantFrom('Running', 'Pending'),
    resourceVersion: fc.integer({ min: 0, max: 1000 }),
  },
  { requiredKeys: ['name', 'namespace', 'ci_type', 'labels', 'containers', 'phase', 'resourceVersion'] },
);
type Content = typeof content extends fc.Arbitrary<infer T> ? T : never;

function recordOf(ci: number, c: Content): UniversalRecord {
  const raw: Record<string, unknown> = {
    metadata: { name: c.name, resourceVersion: String(c.resourceVersion), labels: { ...c.labels } },
    spec: {
      containers: c.containers,
      ...(c.replicas !== undefined && c.replicas !== null ? { replicas: c.replicas } : {}),
    },
    status: { phase: c.phase },
  };
  if (c.nested !== undefined && c.nested !== null) raw.nested = c.nested;
  return {
    ...buildPod({ name: c.name, namespace: c.namespace }),
    external_id: `ci/${ci}`,
    ci_type: c.ci_type,
    raw_data: raw,
    type_data: { phase: c.phase },
  };
}

const step = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('snapshot' as const),
      cis: fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), content), { maxLength: 6 }),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('delta' as const),
      cis: fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), content), { maxLength: 3 }),
      gone: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 2 }),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('sweep' as const) }), weight: 1 },
);

type Stored = Omit<CiState, 'tenant_id'>;

/** Every CI of the run's source as stored now, by ci_id. */
async function storedNow(sql: Sql, sourceId: string): Promise<Map<string, Stored>> {
  const rows = await sql<Stored[]>`
    select ci_id, source_id::text as source_id, scope_id, external_id, ci_type, name, namespace, status, status_updated_at,
           raw_data, type_data, created_at, updated_at
    from configuration_items where source_id = ${sourceId}`;
  return new Map(rows.map((row) => [row.ci_id, { ...row }]));
}

/** What a diff compares of a stored row (see src/inventory/diffs): everything but when it was written. */
const whatItIs = (state: Stored | undefined): Record<string, unknown> | undefined => {
  if (!state) return undefined;
  const { name, namespace, ci_type, status, status_updated_at, scope_id, raw_data, type_data } = state;
  return JSON.parse(
    JSON.stringify({ name, namespace, ci_type, status, status_updated_at, scope_id, raw_data, type_data }),
  );
};

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The paths where two JSON documents differ, written independently of the service: objects descended, anything else whole, a missing key unlike a null. */
function keysBetween(a: unknown, b: unknown, path: string[] = []): string[][] {
  if (isPlainObject(a) && isPlainObject(b)) {
    return [...new Set([...Object.keys(a), ...Object.keys(b)])].flatMap((key) => {
      if (Object.hasOwn(a, key) !== Object.hasOwn(b, key)) return [[...path, key]];
      return keysBetween(a[key], b[key], [...path, key]);
    });
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [path];
}
const pathsBetween = (a: unknown, b: unknown) => keysBetween(a, b).map((keys) => keys.join('.'));
const valueAt = (doc: unknown, keys: string[]) =>
  keys.reduce<unknown>((node, key) => (isPlainObject(node) && Object.hasOwn(node, key) ? node[key] : null), doc);

/** Lists the run's CIs as they were at a moment, through the API, by ci_id. */
async function listedAt(
  request: (path: string) => Promise<{ status: number; body: any }>,
  sourceId: string,
  at: number,
) {
  const reply = await request(
    `/api/v1/configuration-items?as_of=${new Date(at).toISOString()}&status=all&source_id=${sourceId}&limit=1000&sort_by=name&sort_order=asc`,
  );
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body.items as {
    ci_id: string;
    name: string;
    status: string;
    raw_data: unknown;
    scope_id: string | null;
    namespace: string | null;
    ci_type: string;
    last_seen: null;
  }[];
}

const comparable = (state: Stored | CiState | undefined) => {
  if (!state) return undefined;
  const { tenant_id: _tenant, ...rest } = state as CiState;
  return JSON.parse(JSON.stringify(rest));
};

describe(`the inventory as it was (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(300_000);
  const app = useTestApp();

  it('reads every CI at every recorded moment exactly as it was stored then: edits, renames, moves, archiving, sweeps, removal (property)', async () => {
    const { sql } = app.current;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 14 }), async (steps) => {
        run++;
        const source = `as-of-${run}`;
        const settings = {
          inactiveAfterMs: 2 * HOUR,
          archiveInactiveAfterMs: 2 * HOUR,
          archiveRetentionMs: 2 * HOUR,
          batchSize: 3,
        };
        const moments: { at: number; states: Map<string, Stored> }[] = [];
        const key = await createKey(sql, 'adm');
        const get = (path: string) => app.current.request('GET', path, { key });
        const known = new Set<string>();
        let sourceId = '';
        for (const [i, s] of steps.entries()) {
          const now = new Date(T0 + run * 1000 * HOUR + i * 45 * MINUTE);
          if (s.kind === 'sweep') {
            if (sourceId) await sweepLifecycle(sql, settings, now);
          } else {
            const records = [...new Map(s.cis.map(([ci, c]) => [ci, recordOf(ci, c)])).values()];
            const deletions = s.kind === 'delta' ? s.gone.map((ci) => `ci/${ci}`) : undefined;
            sourceId = (await ingest(sql, records, { source, mode: s.kind, deletions, now, scopeId: `scope-${i % 2}` }))
              .sourceId;
          }
          if (!sourceId) continue;
          const states = await storedNow(sql, sourceId);
          for (const id of states.keys()) known.add(id);
          moments.push({ at: now.getTime(), states });
        }
        for (const moment of moments) {
          for (const ciId of known) {
            for (const at of [moment.at, moment.at + 10 * MINUTE]) {
              const read = await ciStateAt(sql, everything, ciId, new Date(at).toISOString());
              expect(comparable(read), `${ciId} at ${new Date(at).toISOString()}`).to.deep.equal(
                comparable(moment.states.get(ciId)),
              );
            }
          }
          // the list at the moment: the same CIs, in the order of their names then
          const listed = await listedAt(get, sourceId, moment.at);
          const expected = [...moment.states.values()].sort((x, y) =>
            x.name === y.name ? (x.ci_id < y.ci_id ? -1 : 1) : x.name < y.name ? -1 : 1,
          );
          expect(
            listed.map((item) => [item.ci_id, item.name, item.status, item.scope_id, item.last_seen]),
          ).to.deep.equal(expected.map((state) => [state.ci_id, state.name, state.status, state.scope_id, null]));
          expect(listed.map((item) => item.raw_data)).to.deep.equal(
            expected.map((state) => JSON.parse(JSON.stringify(state.raw_data))),
          );
        }
        // every diff between two recorded moments is the difference of the states stored then
        for (const [i, earlier] of moments.entries()) {
          for (const later of [moments[i + 1], moments[moments.length - 1]]) {
            if (!later || later.at < earlier.at) continue;
            const between = `from=${new Date(earlier.at).toISOString()}&to=${new Date(later.at).toISOString()}`;
            const reply = await get(`/api/v1/inventory/diff?${between}&source_id=${sourceId}&limit=1000`);
            expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
            const expected = [...known].sort().flatMap((ciId) => {
              const [a, b] = [whatItIs(earlier.states.get(ciId)), whatItIs(later.states.get(ciId))];
              if (!a && !b) return [];
              if (!a) return [[ciId, 'appeared', []]];
              if (!b) return [[ciId, 'disappeared', []]];
              const paths = pathsBetween(a, b).sort();
              return paths.length > 0 ? [[ciId, 'changed', paths]] : [];
            });
            const items = reply.body.items as { ci_id: string; kind: string; changed_fields: string[] }[];
            expect(
              items.map((d) => [d.ci_id, d.kind, [...d.changed_fields].sort()]),
              between,
            ).to.deep.equal(expected);
            const counted = reply.body.counts as { appeared: number; disappeared: number; changed: number };
            expect([counted.appeared, counted.disappeared, counted.changed]).to.deep.equal(
              ['appeared', 'disappeared', 'changed'].map((kind) => expected.filter((e) => e[1] === kind).length),
            );
            // walked two at a time, the pages hold the same: the candidates come in windows that must neither skip nor repeat,
            if (earlier === moments[0] && later === moments[moments.length - 1]) {
              const walked: unknown[] = [];
              let cursor: string | undefined;
              // and each page examines at most three candidates: pages stop short and go on where they stopped
              const { config } = app.current.context;
              const examine = config.diffPageExamine;
              config.diffPageExamine = 3;
              do {
                const page = await get(
                  `/api/v1/inventory/diff?${between}&source_id=${sourceId}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
                );
                expect(page.status, JSON.stringify(page.body)).to.equal(200);
                walked.push(
                  ...(page.body.items as { ci_id: string; kind: string; changed_fields: string[] }[]).map((d) => [
                    d.ci_id,
                    d.kind,
                    [...d.changed_fields].sort(),
                  ]),
                );
                cursor = page.body.next_cursor ?? undefined;
              } while (cursor);
              config.diffPageExamine = examine;
              expect(walked, `${between}, two at a time`).to.deep.equal(expected);
            }
            // each CI's own diff from the first and from the middle moment to the last (the rest is the same query)
            if (
              !(earlier === moments[0] || i === Math.floor(moments.length / 2)) ||
              later !== moments[moments.length - 1]
            )
              continue;
            for (const ciId of known) {
              const one = await get(`/api/v1/configuration-items/${ciId}/diff?${between}`);
              const [a, b] = [whatItIs(earlier.states.get(ciId)), whatItIs(later.states.get(ciId))];
              if (!a && !b) {
                expect(one.status).to.equal(404);
                continue;
              }
              expect(one.status, JSON.stringify(one.body)).to.equal(200);
              const fields = one.body.fields as { field: string; old_value: unknown; new_value: unknown }[];
              const keys = keysBetween(a ?? {}, b ?? {}).sort();
              expect(
                JSON.stringify(fields.map((f) => [f.field, f.old_value, f.new_value]).sort()),
                `${ciId} ${between}: ${JSON.stringify(fields)}`,
              ).to.deep.equal(
                JSON.stringify(keys.map((k) => [k.join('.'), valueAt(a ?? {}, k), valueAt(b ?? {}, k)]).sort()),
              );
            }
          }
        }
      }),
      { numRuns: AS_OF_RUNS, seed: AS_OF_SEED },
    );
  });

  it('answers as_of on the detail route: the state then, 404 before creation and after removal, 422 before history, a scoped key sees only its instances', async () => {
    const { sql } = app.current;
    const t = (minutes: number) => new Date(T0 + minutes * MINUTE);
    const pod = buildPod({ name: 'web-1' });
    await ingest(sql, [pod], { now: t(0), scopeId: 'east' });
    await ingest(sql, [{ ...pod, raw_data: { ...pod.raw_data, spec: { replicas: 5 } }, name: 'web-1b' }], {
      now: t(10),
      scopeId: 'east',
    });
    const ciId = await ciIdOf(sql, pod.external_id);
    const admin = await createKey(sql, 'adm');
    const get = (asOf: string, key = admin) =>
      app.current.request('GET', `/api/v1/configuration-items/${ciId}?as_of=${encodeURIComponent(asOf)}`, { key });

    const then = await get(t(5).toISOString());
    expect(then.status).to.equal(200);
    expect(then.body).to.deep.include({
      name: 'web-1',
      as_of: t(5).toISOString(),
      last_seen: null,
      scope_id: 'east',
      status: 'active',
    });
    expect(then.body.raw_data).to.deep.equal(pod.raw_data);
    expect(then.body.type_data).to.deep.equal({ phase: 'Running', restarts: 0 });
    expect((await get(t(10).toISOString())).body).to.deep.include({ name: 'web-1b' });
    const before = await get(t(-1).toISOString());
    expect(before.status).to.equal(404);
    expect(before.body.error).to.deep.include({
      code: 'HTTP_404',
      message: 'Configuration item not found at that moment',
    });

    const bad = await get('yesterday');
    expect(bad.status).to.equal(422);
    for (const outOfRange of ['0000-01-01T00:00:00Z', '10000-01-01T00:00:00Z'])
      expect((await get(outOfRange)).status, outOfRange).to.equal(422);
    expect((await get('9999-12-31T23:59:59Z')).body).to.deep.include({ name: 'web-1b', as_of: '9999-12-31T23:59:59Z' });
    // microseconds count: the second write is at t(10) exactly
    expect((await get(new Date(t(10).getTime() - 1).toISOString().replace('Z', '999Z'))).body).to.deep.include({
      name: 'web-1',
    });
    await sql`update time_machine set exact_since = ${t(3)}`;
    try {
      const early = await get(t(1).toISOString());
      expect(early.status).to.equal(422);
      expect(early.body.error.details).to.deep.include({ earliest: t(3).toISOString() });
    } finally {
      await sql`update time_machine set exact_since = '-infinity'`;
    }

    const [source] = await sql<
      { source_id: string }[]
    >`select source_id::text from configuration_items where ci_id = ${ciId}`;
    const west = await createKey(sql, 'ro', { scopes: [{ sourceId: source!.source_id, scopeId: 'west' }] });
    expect((await get(t(5).toISOString(), west)).status).to.equal(404);
    const east = await createKey(sql, 'ro', { scopes: [{ sourceId: source!.source_id, scopeId: 'east' }] });
    expect((await get(t(5).toISOString(), east)).status).to.equal(200);

    // removed for good: still there at the moments it existed
    await ingest(sql, [], { now: t(20), scopeId: 'east', mode: 'delta', deletions: [pod.external_id] });
    await sweepLifecycle(
      sql,
      { inactiveAfterMs: HOUR, archiveInactiveAfterMs: HOUR, archiveRetentionMs: HOUR, batchSize: 10 },
      t(200),
    );
    expect((await app.current.request('GET', `/api/v1/configuration-items/${ciId}`, { key: admin })).status).to.equal(
      404,
    );
    expect((await get(t(5).toISOString())).body).to.deep.include({ name: 'web-1', status: 'active' });
    expect((await get(t(30).toISOString())).body).to.deep.include({ name: 'web-1b', status: 'archived' });
    expect((await get(t(200).toISOString())).status).to.equal(404);
  });
  it('lists the relationships that existed at a moment, each neighbour as it was then, and follows them out of existence', async () => {
    const { sql } = app.current;
    const t = (minutes: number) => new Date(T0 + 5000 * HOUR + minutes * MINUTE);
    const node = (name: string) => ({
      ...buildPod({ name }),
      external_id: `node/${name}`,
      ci_type: 'k8s.node',
      namespace: null,
    });
    const pod = (nodeName: string) =>
      buildPod({ name: 'rel-pod', relationships: [{ type: 'runs_on', target_external_id: `node/${nodeName}` }] });
    await ingest(sql, [node('n1'), node('n2'), pod('n1')], { source: 'rels', now: t(0) });
    await ingest(sql, [node('n1'), node('n2'), pod('n2')], { source: 'rels', mode: 'delta', now: t(10) });
    await ingest(sql, [{ ...node('n1'), name: 'n1-renamed' }], { source: 'rels', mode: 'delta', now: t(20) });
    const podId = await ciIdOf(sql, 'pod/default/rel-pod');
    const n1 = await ciIdOf(sql, 'node/n1');
    const admin = await createKey(sql, 'adm');
    const rels = async (ciId: string, asOf?: Date, extra = '') => {
      const reply = await app.current.request(
        'GET',
        `/api/v1/configuration-items/${ciId}/relationships?include_inactive=true${extra}${asOf ? `&as_of=${asOf.toISOString()}` : ''}`,
        { key: admin },
      );
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body as {
        items: { related_ci_name: string; direction: string; last_seen: string; id: string }[];
        total: number;
        as_of?: string;
      };
    };
    expect((await rels(podId)).items.map((r) => r.related_ci_name)).to.deep.equal(['n2']);
    const early = await rels(podId, t(5));
    expect(early.items.map((r) => [r.direction, r.related_ci_name])).to.deep.equal([['outgoing', 'n1']]);
    expect(early.as_of).to.equal(t(5).toISOString());
    expect(Date.parse(early.items[0]!.last_seen)).to.be.at.most(t(5).getTime());
    expect((await rels(podId, t(15))).items.map((r) => r.related_ci_name)).to.deep.equal(['n2']);
    // the node keeps its old name at moments before the rename, and the pod it had then
    expect((await rels(n1, t(5))).items.map((r) => [r.direction, r.related_ci_name])).to.deep.equal([
      ['incoming', 'rel-pod'],
    ]);
    expect((await rels(n1, t(15))).items).to.deep.equal([]);
    expect((await rels(podId, t(5), '&sort_by=related_ci_name')).items.map((r) => r.related_ci_name)).to.deep.equal([
      'n1',
    ]);
    const [pending] = await sql`select count(*)::int as n from relationship_history`;
    expect(pending!.n).to.equal(1);
    // the neighbour's name at the moment, not now
    await ingest(sql, [{ ...node('n2'), name: 'n2-renamed' }], { source: 'rels', mode: 'delta', now: t(30) });
    expect((await rels(podId, t(25))).items.map((r) => r.related_ci_name)).to.deep.equal(['n2']);
    expect((await rels(podId)).items.map((r) => r.related_ci_name)).to.deep.equal(['n2-renamed']);
    const before = await app.current.request(
      'GET',
      `/api/v1/configuration-items/${podId}/relationships?as_of=${t(-5).toISOString()}`,
      { key: admin },
    );
    expect(before.status).to.equal(404);
  });
  it('forgets the tombstones of CIs removed before the retention horizon, and keeps the later ones', async () => {
    const { sql } = app.current;
    const now = new Date(T0 + 9000 * HOUR);
    const [source] = await sql<{ id: string }[]>`select id::text from sources limit 1`;
    const sourceId =
      source?.id ?? (await ingest(sql, [buildPod({ name: 'anchor' })], { source: 'tombs', now })).sourceId;
    for (const [name, removedDaysAgo] of [
      ['old', 40],
      ['recent', 10],
    ] as const) {
      await sql`
        insert into ci_tombstones (ci_id, tenant_id, source_id, external_id, ci_type, name, status, raw_data, type_data, created_at, updated_at, removed_at)
        values (gen_random_uuid(), ${DEFAULT_TENANT_ID}, ${sourceId}, ${`tomb/${name}`}, 'k8s.pod', ${name}, 'archived', '{}', '{}',
                ${new Date(now.getTime() - 50 * 24 * HOUR)}, ${new Date(now.getTime() - 50 * 24 * HOUR)}, ${new Date(now.getTime() - removedDaysAgo * 24 * HOUR)})`;
    }
    await trimChangeHistory(sql, { defaultMs: 30 * 24 * HOUR, byType: new Map() }, now, 1);
    expect(
      (await sql<{ name: string }[]>`select name from ci_tombstones where external_id like 'tomb/%'`).map(
        (r) => r.name,
      ),
    ).to.deep.equal(['recent']);
  });
});
