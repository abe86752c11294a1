import { expect } from 'chai';
import { loadDemo } from '../../../src/collection/demo/service.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';

// the demo's week ends at 15:00 on the 20th; its incident was the afternoon before
const NOW = new Date('2026-11-20T15:27:00Z');

interface Line {
  id: string;
  ci_name: string;
  ci_type: string;
  kind: string;
  severity: string;
  changed_at: string;
  fold: { records: number; last_at: string };
  rollup: {
    owner_id: string;
    first_at: string;
    sets: number;
    cis: { ci_type: string; cis: number }[];
    record_ids: string[];
  };
}

describe("readable changes of the demo's week", function () {
  this.timeout(120_000);
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    await loadDemo(app.current.sql, {
      tenantId: DEFAULT_TENANT_ID,
      now: NOW,
      batchSize: 1000,
      progress: () => undefined,
    });
    admin = await createKey(app.current.sql, 'adm');
  });

  it('gives every change the built-in collector types wrote a kind and a severity', async () => {
    const rows = await app.current.sql<{ ci_type: string; change_type: string; kind: string; severity: string }[]>`
      select distinct ci_type, change_type, kind, severity from change_records order by 1, 2, 3, 4`;
    const updated = rows.filter((r) => r.change_type === 'UPDATED').map((r) => `${r.ci_type} ${r.kind} ${r.severity}`);
    expect(updated).to.deep.equal([
      'k8s.configmap config medium',
      'k8s.deployment config high',
      'k8s.deployment health medium',
      'k8s.deployment image medium',
      'k8s.deployment scale low',
      'k8s.endpointslice relationship info',
      'k8s.node replaced medium',
      'k8s.node version medium',
      'k8s.pod restart high',
      'k8s.replicaset config high',
      'k8s.replicaset health medium',
      'k8s.replicaset image medium',
      'k8s.replicaset scale low',
      'mariadb.server config medium',
      'nats.stream config medium',
      'postgresql.extension version medium',
      'postgresql.role config medium',
      'postgresql.server config medium',
      'prometheus.server version medium',
      'prometheus.target health medium',
      'rabbitmq.policy config medium',
      'rabbitmq.queue config medium',
      'redis.server config medium',
    ]);
    // creations are news of no weight; removals weigh more where they are not a rollout's churn
    for (const row of rows.filter((r) => r.change_type !== 'UPDATED')) {
      const expected =
        row.change_type === 'CREATED'
          ? 'created info'
          : ['k8s.pod', 'k8s.replicaset', 'k8s.endpointslice'].includes(row.ci_type)
            ? 'archived info'
            : 'archived medium';
      expect(`${row.ci_type} ${row.kind} ${row.severity}`).to.equal(`${row.ci_type} ${expected}`);
    }
  });

  it("reads checkout's incident on its deployment as three lines, each opening into its exact records", async () => {
    const [deployment] = await app.current.sql<{ ci_id: string }[]>`
      select ci_id from configuration_items where ci_type = 'k8s.deployment' and namespace = 'shop' and name = 'checkout' and scope_id = 'east'`;
    const window = 'start_date=2026-11-19T13:30:00Z&end_date=2026-11-19T14:30:00Z';
    const reply = await app.current.get<{ items: Line[]; total: number }>(
      `/api/v1/ci-changes/${deployment!.ci_id}?rollup=true&fold=true&${window}`,
      admin,
    );
    expect(reply.status, reply.text).to.equal(200);
    const lines = [...reply.body.items].reverse();
    expect(
      lines.map((l) => [l.rollup.first_at.slice(11, 16), l.kind, l.severity, l.ci_type, l.rollup.sets]),
    ).to.deep.equal([
      ['13:40', 'config', 'high', 'k8s.deployment', 1],
      ['13:52', 'restart', 'high', 'k8s.pod', 2],
      ['14:20', 'config', 'high', 'k8s.deployment', 1],
    ]);
    expect(lines[1]!.fold.last_at).to.equal('2026-11-19T14:05:00.000Z');
    expect(lines[1]!.rollup.cis.find((c) => c.ci_type === 'k8s.pod')!.cis).to.be.greaterThan(1);
    // each line opens into its exact records: together they are every record of the rolled-up window
    const exact = await app.current.get<{ items: { id: string; rollup: { owner_id: string } }[] }>(
      `/api/v1/ci-changes/${deployment!.ci_id}?rollup=true&limit=5000&${window}`,
      admin,
    );
    expect(exact.status).to.equal(200);
    const ids = lines.flatMap((l) => l.rollup.record_ids).sort();
    expect(ids).to.deep.equal(exact.body.items.map((r) => r.id).sort());
    expect(exact.body.items.every((r) => r.rollup.owner_id === deployment!.ci_id)).to.equal(true);
    // around the deployment, its pods' changes read on it too, beside what else is near (the config map it mounts)
    const around = await app.current.get<{ items: Line[] }>(
      `/api/v1/changes?related_to=${deployment!.ci_id}&rollup=true&fold=true&${window}`,
      admin,
    );
    expect(around.status, around.text).to.equal(200);
    const mine = around.body.items.filter((l) => l.rollup.owner_id === deployment!.ci_id);
    expect(mine.map((l) => [l.rollup.first_at.slice(11, 16), l.kind]).reverse()).to.deep.equal([
      ['13:40', 'config'],
      ['13:52', 'restart'],
      ['14:20', 'config'],
    ]);
    expect(around.body.items.some((l) => l.ci_type === 'k8s.pod' && l.rollup.owner_id !== deployment!.ci_id)).to.equal(
      false,
    );
  });
});
