import { expect } from 'chai';
import fc from 'fast-check';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';
import { hardDelete, insertRelationship, setStatus } from './fixtures.js';

/** Which end depends on which, as the service documents it: written here again, independently. */
const DEPENDENT_IS_FROM: Record<string, boolean> = {
  runs_on: true,
  mounts: true,
  bound_to: true,
  routes_to: true,
  exposes: true,
  member_of: true,
  scraped_by: true,
  describes: true,
  hosted_on: true,
  owned_by: true,
  installed_in: true,
  manages: false,
};
const TYPES = Object.keys(DEPENDENT_IS_FROM);
/**
 * Graphs the property below walks: 30 in each database's run, each from a seed of its own, so that a
 * CI run (the suite on both) walks 60 different ones, as many as the server alone walked when both
 * started from one seed. CINV_GRAPH_RUNS sets the number (`npm run fuzz` walks 300), CINV_GRAPH_SEED
 * replays a reported failure.
 */
const GRAPH_RUNS = Number(process.env.CINV_GRAPH_RUNS ?? 30);
const GRAPH_SEED = Number(process.env.CINV_GRAPH_SEED ?? 20261127 + (onRealPostgres ? 1 : 0));

interface Edge {
  id: string;
  from: string;
  to: string;
  type: string;
}

/** A plain breadth-first search per way: depth and number of shortest walks of each CI it may enter. */
function expectedWalk(
  centre: string,
  edges: Edge[],
  enter: (id: string) => boolean,
  depth: number,
  direction: 'downstream' | 'upstream' | 'both',
) {
  const step = (id: string, way: 'down' | 'up') =>
    edges.flatMap((e) => {
      const dependent = DEPENDENT_IS_FROM[e.type] ? e.from : e.to;
      const dependency = DEPENDENT_IS_FROM[e.type] ? e.to : e.from;
      if (way === 'down' && dependency === id) return [dependent];
      if (way === 'up' && dependent === id) return [dependency];
      return [];
    });
  const result = new Map<string, { depth: number; paths: number }>([[centre, { depth: 0, paths: 1 }]]);
  const ways =
    direction === 'both'
      ? (['down', 'up'] as const)
      : direction === 'downstream'
        ? (['down'] as const)
        : (['up'] as const);
  const perWay = ways.map((way) => {
    const seen = new Map<string, { depth: number; paths: number }>([[centre, { depth: 0, paths: 1 }]]);
    let frontier = [centre];
    for (let d = 1; d <= depth && frontier.length > 0; d++) {
      const level = new Map<string, number>();
      for (const near of frontier) {
        for (const far of step(near, way)) {
          if (seen.has(far) || !enter(far)) continue;
          level.set(far, (level.get(far) ?? 0) + seen.get(near)!.paths);
        }
      }
      for (const [id, paths] of level) seen.set(id, { depth: d, paths });
      frontier = [...level.keys()];
    }
    return seen;
  });
  for (const seen of perWay) {
    for (const [id, found] of seen) {
      const best = result.get(id);
      if (!best || found.depth < best.depth) result.set(id, { ...found });
      else if (id !== centre && found.depth === best.depth && best !== found) best.paths += found.paths;
    }
  }
  // the centre's own entry is not a sum of the ways
  result.set(centre, { depth: 0, paths: 1 });
  return { result, ways: ways.map((way, i) => [way, perWay[i]!] as const) };
}

describe(`the dependency graph around a CI (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(300_000);
  let app: TestApp;
  let admin: string;

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    admin = await createKey(sql, 'adm');
  });
  after(async () => {
    await app?.close();
  });

  const graph = async (ciId: string, query: string, key = admin) => {
    const reply = await app.request('GET', `/api/v1/configuration-items/${ciId}/graph?${query}`, { key });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body as {
      nodes: { ci_id: string; depth: number; paths_count: number; name: string; status: string }[];
      edges: { from: string; to: string; relationship_type: string }[];
      truncated: boolean;
      hidden: number;
    };
  };

  it('walks like a breadth-first search: cycles, diamonds, self-loops, dangling edges, inactive CIs and other instances (property)', async () => {
    const { sql } = await testDatabase();
    const scopedKeys = new Map<string, string>();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          size: fc.integer({ min: 3, max: 12 }),
          // positions are taken modulo the size; manages (the reversed type) as often as the rest together
          edges: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.oneof(fc.constant('manages'), fc.constantFrom(...TYPES))), {
            minLength: 4,
            maxLength: 36,
          }),
          inactive: fc.array(fc.nat(), { maxLength: 3 }),
          gone: fc.array(fc.nat(), { maxLength: 2 }),
          west: fc.array(fc.nat(), { maxLength: 4 }),
          depth: fc.integer({ min: 1, max: 5 }),
          direction: fc.constantFrom('downstream' as const, 'upstream' as const, 'both' as const),
          includeInactive: fc.boolean(),
          scoped: fc.boolean(),
        }),
        async (g) => {
          run++;
          const names = Array.from({ length: g.size }, (_, i) => `n${i}`);
          // the centre (n0) is never made inactive, removed or put in the other instance
          const pick = (positions: number[]) =>
            new Set(
              positions
                .map((i) => i % g.size)
                .filter((i) => i > 0)
                .map((i) => names[i]!),
            );
          const west = pick(g.west);
          const source = `graph-${run}`;
          const record = (name: string) => ({
            ...buildPod({ name, external_id: `ci/${name}` }),
            ci_type: `k8s.kind${name.length % 2}`,
          });
          const { sourceId } = await ingest(sql, names.filter((n) => !west.has(n)).map(record), {
            source,
            scopeId: 'east',
          });
          if (west.size > 0) await ingest(sql, [...west].map(record), { source, scopeId: 'west', mode: 'delta' });
          const ids = new Map(
            (
              await sql<
                { ci_id: string; name: string }[]
              >`select ci_id, name from configuration_items where source_id = ${sourceId}`
            ).map((r) => [r.name, r.ci_id]),
          );
          const byId = new Map([...ids].map(([name, id]) => [id, name]));
          const edges: Edge[] = [];
          const written = new Set<string>();
          for (const [i, j, type] of g.edges) {
            const [a, b] = [i % g.size, j % g.size];
            const [from, to] = [ids.get(names[a]!)!, ids.get(names[b]!)!];
            if (written.has(`${from} ${to} ${type}`)) continue;
            written.add(`${from} ${to} ${type}`);
            const scope = (name: string) => (west.has(name) ? 'west' : 'east');
            const id = await insertRelationship(sql, from, to, type, sourceId, {
              from: scope(names[a]!),
              to: scope(names[b]!),
            });
            edges.push({ id, from, to, type });
          }
          const inactive = pick(g.inactive);
          for (const name of inactive) await setStatus(sql, ids.get(name)!, 'inactive');
          const gone = pick(g.gone);
          for (const name of gone) await hardDelete(sql, ids.get(name)!);

          let key = admin;
          if (g.scoped) {
            key = scopedKeys.get(sourceId) ?? (await createKey(sql, 'ro', { scopes: [{ sourceId, scopeId: 'east' }] }));
            scopedKeys.set(sourceId, key);
          }
          const centre = ids.get('n0')!;
          const enter = (id: string) => {
            const name = byId.get(id)!;
            if (gone.has(name)) return false;
            if (g.scoped && west.has(name)) return false;
            return g.includeInactive || !inactive.has(name);
          };
          const { result: expected, ways } = expectedWalk(centre, edges, enter, g.depth, g.direction);
          const answer = await graph(
            centre,
            `depth=${g.depth}&direction=${g.direction}&include_inactive=${g.includeInactive}&max_nodes=5000`,
            key,
          );
          const got = new Map(answer.nodes.map((n) => [n.ci_id, { depth: n.depth, paths: n.paths_count }]));
          const label = (m: Map<string, { depth: number; paths: number }>) =>
            Object.fromEntries([...m].map(([id, v]) => [byId.get(id), v]));
          expect(label(got), JSON.stringify(g)).to.deep.equal(label(expected));
          expect(answer.truncated).to.equal(false);
          // every edge returned joins two returned CIs, as stored
          const stored = new Set(edges.map((e) => `${e.from} ${e.to} ${e.type}`));
          for (const edge of answer.edges) {
            expect(got.has(edge.from) && got.has(edge.to)).to.equal(true);
            expect(stored.has(`${edge.from} ${edge.to} ${edge.relationship_type}`)).to.equal(true);
          }
          // hidden: the relationships met walking on from a CI, in the way it was reached, that lead into the other instance
          const hidden = edges.filter((e) => {
            const dependent = DEPENDENT_IS_FROM[e.type] ? e.from : e.to;
            const dependency = DEPENDENT_IS_FROM[e.type] ? e.to : e.from;
            return ways.some(([way, seen]) => {
              const [near, far] = way === 'down' ? [dependency, dependent] : [dependent, dependency];
              const walkedOn = (seen.get(near)?.depth ?? g.depth) < g.depth;
              return walkedOn && west.has(byId.get(far)!) && !gone.has(byId.get(far)!) && g.scoped;
            });
          });
          expect(answer.hidden).to.equal(hidden.length);
        },
      ),
      { numRuns: GRAPH_RUNS, seed: GRAPH_SEED },
    );
  });

  it('points downstream from a dependency to what depends on it, for every relationship type the collectors write', async () => {
    const { sql } = await testDatabase();
    const { sourceId } = await ingest(sql, [buildPod({ name: 'dependency', external_id: 'x/dependency' })], {
      source: 'graph-types',
    });
    const [dependency] = await sql<
      { ci_id: string }[]
    >`select ci_id from configuration_items where source_id = ${sourceId}`;
    for (const type of TYPES) {
      const { sourceId: other } = await ingest(
        sql,
        [buildPod({ name: `dependent-${type}`, external_id: `x/${type}` })],
        { source: 'graph-types', mode: 'delta' },
      );
      const [dependent] = await sql<
        { ci_id: string }[]
      >`select ci_id from configuration_items where source_id = ${other} and name = ${`dependent-${type}`}`;
      // manages is written from the owner to what it manages: the managed one depends on its owner
      if (type === 'manages') await insertRelationship(sql, dependency!.ci_id, dependent!.ci_id, type, other);
      else await insertRelationship(sql, dependent!.ci_id, dependency!.ci_id, type, other);
    }
    const down = await graph(dependency!.ci_id, 'direction=downstream&depth=1');
    expect(
      down.nodes
        .filter((n) => n.depth === 1)
        .map((n) => n.name)
        .sort(),
    ).to.deep.equal(TYPES.map((t) => `dependent-${t}`).sort());
    expect(down.edges).to.have.length(TYPES.length);
    const up = await graph(dependency!.ci_id, 'direction=upstream&depth=1');
    expect(up.nodes.map((n) => n.name)).to.deep.equal(['dependency']);
    // from a dependent, upstream leads to the dependency whatever the type
    const one = down.nodes.find((n) => n.name === 'dependent-manages')!;
    expect((await graph(one.ci_id, 'direction=upstream&depth=1')).nodes.map((n) => n.name).sort()).to.deep.equal([
      'dependency',
      'dependent-manages',
    ]);
  });

  it('cuts a wide walk at the nearest CIs, keeps only the types asked for, and walks through the others when told', async () => {
    const { sql } = await testDatabase();
    // a node, 20 pods on it, a service routing to each pod, an ingress exposing each service
    const records = [
      { ...buildPod({ name: 'wide-node', external_id: 'node/wide' }), ci_type: 'k8s.node', namespace: null },
      ...Array.from({ length: 20 }, (_, i) =>
        buildPod({
          name: `wide-pod-${i}`,
          external_id: `pod/wide/${i}`,
          relationships: [{ type: 'runs_on', target_external_id: 'node/wide' }],
        }),
      ),
      ...Array.from({ length: 20 }, (_, i) => ({
        ...buildPod({
          name: `wide-svc-${i}`,
          external_id: `svc/wide/${i}`,
          relationships: [{ type: 'routes_to', target_external_id: `pod/wide/${i}` }],
        }),
        ci_type: 'k8s.service',
      })),
      ...Array.from({ length: 20 }, (_, i) => ({
        ...buildPod({
          name: `wide-ing-${i}`,
          external_id: `ing/wide/${i}`,
          relationships: [{ type: 'exposes', target_external_id: `svc/wide/${i}` }],
        }),
        ci_type: 'k8s.ingress',
      })),
    ];
    await ingest(sql, records, { source: 'graph-wide' });
    const [node] = await sql<
      { ci_id: string }[]
    >`select ci_id from configuration_items where external_id = 'node/wide'`;
    const whole = await graph(node!.ci_id, 'direction=downstream&depth=3');
    expect(whole.nodes).to.have.length(61);
    expect(whole.nodes.filter((n) => n.depth === 3)).to.have.length(20);
    expect(whole.truncated).to.equal(false);
    const cut = await graph(node!.ci_id, 'direction=downstream&depth=3&max_nodes=30');
    expect(cut.truncated).to.equal(true);
    expect(cut.nodes).to.have.length(30);
    expect(cut.nodes.filter((n) => n.depth === 1)).to.have.length(20);
    expect(Math.max(...cut.nodes.map((n) => n.depth))).to.equal(2);
    // only ingresses: not found walking through ingresses alone, found walking through everything
    expect((await graph(node!.ci_id, 'direction=downstream&depth=3&ci_types=k8s.ingress')).nodes).to.have.length(1);
    const ingresses = await graph(node!.ci_id, 'direction=downstream&depth=3&ci_types=k8s.ingress&through=all');
    expect(ingresses.nodes.filter((n) => n.depth === 3)).to.have.length(20);
    expect(ingresses.edges).to.deep.equal([]);
    // an unknown CI, a depth beyond 6, a budget beyond 5 000
    expect(
      (
        await app.request('GET', '/api/v1/configuration-items/0190a0e0-0000-7000-8000-000000000000/graph', {
          key: admin,
        })
      ).status,
    ).to.equal(404);
    const deep = await app.request('GET', `/api/v1/configuration-items/${node!.ci_id}/graph?depth=7`, { key: admin });
    expect([deep.status, deep.body.error.code]).to.deep.equal([422, 'VALIDATION_ERROR']);
    expect(
      (await app.request('GET', `/api/v1/configuration-items/${node!.ci_id}/graph?max_nodes=5001`, { key: admin }))
        .status,
    ).to.equal(422);
    expect(
      (await app.request('GET', `/api/v1/configuration-items/${node!.ci_id}/graph?direction=sideways`, { key: admin }))
        .status,
    ).to.equal(422);
  });

  it('walks the relationships that existed at a moment, each CI as it was then', async () => {
    const { sql } = await testDatabase();
    const t0 = new Date('2026-06-01T10:00:00Z');
    const t1 = new Date('2026-06-01T11:00:00Z');
    const pod = (name: string, node: string) =>
      buildPod({
        name,
        external_id: `pod/moment/${name}`,
        relationships: [{ type: 'runs_on', target_external_id: `node/${node}` }],
      });
    const nodes = ['m-node-a', 'm-node-b'].map((name) => ({
      ...buildPod({ name, external_id: `node/${name}` }),
      ci_type: 'k8s.node',
      namespace: null,
    }));
    await ingest(sql, [...nodes, pod('m-pod', 'm-node-a')], { source: 'graph-moment', now: t0 });
    // an hour later the pod runs on the other node
    await ingest(sql, [...nodes, pod('m-pod', 'm-node-b')], { source: 'graph-moment', now: t1 });
    const [a] = await sql<
      { ci_id: string }[]
    >`select ci_id from configuration_items where external_id = 'node/m-node-a'`;
    const now = await graph(a!.ci_id, 'direction=downstream');
    expect(now.nodes.map((n) => n.name)).to.deep.equal(['m-node-a']);
    const then = await graph(a!.ci_id, `direction=downstream&as_of=${new Date(t0.getTime() + 60_000).toISOString()}`);
    expect(then.nodes.map((n) => n.name)).to.deep.equal(['m-node-a', 'm-pod']);
    expect(then).to.have.property('as_of');
  });
  it('narrows the change history and its statistics to the CIs around one: the union of their own histories', async () => {
    const { sql } = await testDatabase();
    const t0 = new Date('2026-07-01T08:00:00Z');
    const records = (version: number) => [
      { ...buildPod({ name: 'r-node', external_id: 'node/r' }), ci_type: 'k8s.node', namespace: null },
      ...[0, 1, 2].map((i) =>
        buildPod({
          name: `r-pod-${i}`,
          external_id: `pod/r/${i}`,
          replicas: version + i,
          relationships: [{ type: 'runs_on', target_external_id: 'node/r' }],
        }),
      ),
      {
        ...buildPod({
          name: 'r-svc',
          external_id: 'svc/r',
          replicas: version,
          relationships: [{ type: 'routes_to', target_external_id: 'pod/r/0' }],
        }),
        ci_type: 'k8s.service',
      },
      // a pod on another node: outside the radius, changed as often
      buildPod({ name: 'r-elsewhere', external_id: 'pod/r/elsewhere', replicas: version }),
    ];
    for (let version = 1; version <= 3; version++)
      await ingest(sql, records(version), { source: 'graph-related', now: new Date(t0.getTime() + version * 60_000) });
    const [node] = await sql<{ ci_id: string }[]>`select ci_id from configuration_items where external_id = 'node/r'`;
    const radius = (await graph(node!.ci_id, 'direction=downstream&depth=2')).nodes.map((n) => n.ci_id);
    expect(radius).to.have.length(5);
    const own = new Set<string>();
    for (const id of radius) {
      const history = await app.request('GET', `/api/v1/ci-changes/${id}?limit=1000`, { key: admin });
      for (const record of history.body.items as { id: string }[]) own.add(record.id);
    }
    const window = `start_date=${t0.toISOString()}`;
    const around = await app.request(
      'GET',
      `/api/v1/changes?related_to=${node!.ci_id}&depth=2&direction=downstream&${window}&limit=1000`,
      { key: admin },
    );
    expect(around.status, around.text).to.equal(200);
    expect(new Set((around.body.items as { id: string }[]).map((r) => r.id))).to.deep.equal(own);
    expect(around.body.total).to.equal(own.size);
    // the other filters still apply, and so do the statistics and the CSV
    const updates = await app.request(
      'GET',
      `/api/v1/changes?related_to=${node!.ci_id}&depth=2&direction=downstream&${window}&filter=change_type:eq:UPDATED`,
      { key: admin },
    );
    expect(updates.body.total).to.equal(
      (around.body.items as { change_type: string }[]).filter((r) => r.change_type === 'UPDATED').length,
    );
    const stats = await app.request(
      'GET',
      `/api/v1/changes/stats?related_to=${node!.ci_id}&depth=2&direction=downstream&${window}`,
      { key: admin },
    );
    expect(stats.status, stats.text).to.equal(200);
    expect([stats.body.total_changes, stats.body.affected_cis]).to.deep.equal([own.size, 5]);
    const csv = await app.request(
      'GET',
      `/api/v1/changes?related_to=${node!.ci_id}&depth=1&direction=downstream&${window}`,
      { key: admin, headers: { accept: 'text/csv' } },
    );
    expect([csv.status, csv.headers.get('content-type')]).to.deep.equal([200, 'text/csv; charset=utf-8']);
    expect(csv.text).to.include('r-pod-1').and.not.include('r-svc').and.not.include('r-elsewhere');
    // depth and direction belong to related_to
    const stray = await app.request('GET', '/api/v1/changes?depth=2', { key: admin });
    expect([stray.status, stray.body.error.code]).to.deep.equal([422, 'VALIDATION_ERROR']);
  });
  it('summarises the impact of a CI: what depends on it by depth, type and status, and the latest changes of what it depends on', async () => {
    const { sql } = await testDatabase();
    const t0 = new Date('2026-08-01T08:00:00Z');
    const records = (version: number) => [
      {
        ...buildPod({ name: 'i-node', external_id: 'node/i', replicas: version }),
        ci_type: 'k8s.node',
        namespace: null,
      },
      ...[0, 1, 2].map((i) =>
        buildPod({
          name: `i-pod-${i}`,
          external_id: `pod/i/${i}`,
          relationships: [{ type: 'runs_on', target_external_id: 'node/i' }],
        }),
      ),
      {
        ...buildPod({
          name: 'i-svc',
          external_id: 'svc/i',
          replicas: version,
          relationships: [{ type: 'routes_to', target_external_id: 'pod/i/0' }],
        }),
        ci_type: 'k8s.service',
      },
    ];
    for (let version = 1; version <= 2; version++)
      await ingest(sql, records(version), { source: 'graph-impact', now: new Date(t0.getTime() + version * 60_000) });
    const id = async (external: string) =>
      (await sql<{ ci_id: string }[]>`select ci_id from configuration_items where external_id = ${external}`)[0]!.ci_id;
    await setStatus(sql, await id('pod/i/2'), 'inactive');
    const node = await app.request('GET', `/api/v1/configuration-items/${await id('node/i')}/impact`, { key: admin });
    expect(node.status, node.text).to.equal(200);
    expect(node.body.downstream).to.deep.include({ total: 4, truncated: false, hidden: 0 });
    expect(node.body.downstream.by_depth).to.deep.equal([
      {
        depth: 1,
        active: 2,
        inactive: 1,
        archived: 0,
        total: 3,
        by_type: [{ ci_type: 'k8s.pod', active: 2, inactive: 1, archived: 0, total: 3 }],
      },
      {
        depth: 2,
        active: 1,
        inactive: 0,
        archived: 0,
        total: 1,
        by_type: [{ ci_type: 'k8s.service', active: 1, inactive: 0, archived: 0, total: 1 }],
      },
    ]);
    // from the service: what it depends on (its pod, the node) and what changed there, newest first
    const svc = await app.request('GET', `/api/v1/configuration-items/${await id('svc/i')}/impact?changes=100`, {
      key: admin,
    });
    expect(svc.body.upstream.total).to.equal(2);
    const latest = svc.body.upstream.latest_changes as { ci_name: string; depth: number; changed_at: string }[];
    expect([...new Set(latest.map((c) => `${c.ci_name}@${c.depth}`))].sort()).to.deep.equal([
      'i-node@2',
      'i-pod-0@1',
      'i-svc@0',
    ]);
    expect(latest.map((c) => c.changed_at)).to.deep.equal([...latest.map((c) => c.changed_at)].sort().reverse());
    // the change history is part of the summary: a key that may read relationships only is refused
    const relationshipsOnly = await createKey(sql, 'svc', { permissions: ['relationships:read'] });
    expect(
      (await app.request('GET', `/api/v1/configuration-items/${await id('svc/i')}/impact`, { key: relationshipsOnly }))
        .status,
    ).to.equal(403);
  });
});
