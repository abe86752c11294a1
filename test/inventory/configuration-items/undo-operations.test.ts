import { expect } from 'chai';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

const T0 = new Date('2026-05-04T08:00:00Z');
const T1 = new Date('2026-05-04T08:10:00Z');

/**
 * The way back that one write leaves (ci_undo): its operations, and the document they restore. The
 * documents differ in every way a collector's can: keys added and removed at several depths, an
 * object becoming an array, a value becoming JSON null, and an unchanged subtree beside a changed one.
 */
describe(`the way back of one write (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(60_000);
  const before = {
    metadata: { name: 'web-1', namespace: 'default', labels: { app: 'web', tier: 'front' }, annotations: { a: '1' } },
    spec: {
      containers: [{ name: 'app', image: 'nginx:1.25' }],
      affinity: { node: { zone: 'a', rack: { row: 1, slot: 2 } } },
    },
    status: { phase: 'Running', hostIP: '10.0.0.1', conditions: { ready: true } },
  };
  const after = {
    metadata: { name: 'web-1', namespace: 'default', labels: { app: 'web', track: 'canary' }, annotations: { a: '1' } },
    spec: {
      containers: [{ name: 'app', image: 'nginx:1.27' }],
      affinity: { node: { zone: 'a', rack: { row: 1, slot: 3, unit: 'u1' } } },
      paused: true,
    },
    status: { phase: null, conditions: [{ type: 'Ready' }] },
  };

  it('records one operation per changed leaf, with disjoint paths, and restores the document exactly', async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    await ingest(sql, [buildPod({ name: 'web-1', raw_data: before })], { now: T0 });
    await ingest(sql, [buildPod({ name: 'web-1', raw_data: after })], { now: T1 });
    const ciId = await ciIdOf(sql, 'pod/default/web-1');

    const [write] = await sql<{ undo: { p: string[]; v?: unknown }[]; same: boolean }[]>`
      select undo, before_digest = (select cinv_state_digest(to_jsonb(s)) from configuration_items c cross join lateral cinv_ci_at(to_jsonb(c), ${T0}) s where c.ci_id = ${ciId}) as same
      from ci_undo where ci_id = ${ciId}`;
    const raw = write!.undo
      .filter((op) => op.p[0] === 'raw_data')
      .map((op) => JSON.stringify([op.p.join('.'), 'v' in op ? op.v : '(absent)']));
    expect(raw.sort()).to.deep.equal(
      [
        ['raw_data.metadata.labels.tier', 'front'],
        ['raw_data.metadata.labels.track', '(absent)'],
        ['raw_data.spec.containers', [{ name: 'app', image: 'nginx:1.25' }]],
        ['raw_data.spec.affinity.node.rack.slot', 2],
        ['raw_data.spec.affinity.node.rack.unit', '(absent)'],
        ['raw_data.spec.paused', '(absent)'],
        ['raw_data.status.phase', 'Running'],
        ['raw_data.status.hostIP', '10.0.0.1'],
        ['raw_data.status.conditions', { ready: true }],
      ]
        .map((op) => JSON.stringify(op))
        .sort(),
    );
    const paths = write!.undo.map((op) => op.p.join('.'));
    for (const path of paths)
      expect(
        paths.filter((other) => other.startsWith(`${path}.`)),
        `operations inside ${path}`,
      ).to.deep.equal([]);
    expect(write!.same, 'the digest recorded before the write is that of the CI taken back to before it').to.equal(
      true,
    );

    const [then] = await sql<{ raw_data: unknown }[]>`
      select s.raw_data from configuration_items c cross join lateral cinv_ci_at(to_jsonb(c), ${T0}) s where c.ci_id = ${ciId}`;
    expect(then!.raw_data).to.deep.equal(before);
  });
});
