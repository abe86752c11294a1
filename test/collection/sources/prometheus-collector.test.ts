import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { createKey, useTestApp } from '../../support/app.js';
import { describeWith } from '../../support/dependencies.js';
import { thisMachine } from '../../support/local-machine.js';
import { expectDocumentedTypeData } from '../../support/type-data.js';
import {
  NODE_EXPORTER_BIN,
  PROMETHEUS_BIN,
  startPrometheusStack,
  waitForTargetDown,
  type PrometheusStack,
} from '../../support/prometheus.js';

const REASON =
  '(skipped outside CI when prometheus or prometheus-node-exporter is not installed; under CI=true a missing one fails)';

interface Item {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: string;
}

describeWith(Boolean(PROMETHEUS_BIN && NODE_EXPORTER_BIN))(
  `the prometheus collector type against a real Prometheus and node_exporter ${REASON}`,
  function () {
    this.timeout(90_000);
    const app = useTestApp();
    let stack: PrometheusStack | undefined;
    let admin: string;
    let source: { id: number; collector_id: number };

    before(async () => {
      stack = await startPrometheusStack();
    });
    after(async () => {
      await stack?.stop();
    });

    const collect = async () => {
      const triggered = await app.current.request(
        'POST',
        `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`,
        { key: admin },
      );
      expect(triggered.status, triggered.text).to.equal(202);
      const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 10_000, pollMs: 60_000 });
      await worker.tick();
      await worker.idle();
      await worker.stop();
      return (await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin)).body;
    };
    const list = async (ciType: string) =>
      (await app.current.get(`/api/v1/configuration-items?status=all&limit=100&filter=ci_type:eq:${ciType}`, admin))
        .body.items as Item[];
    const typeData = async (ciType: string, ciId: string) => {
      const typed = (
        await app.current.get(
          `/api/v1/configuration-items?status=all&limit=100&include_type_data=true&filter=ci_type:eq:${ciType}`,
          admin,
        )
      ).body.items as { id: string; attributes: Record<string, Record<string, unknown>> }[];
      return typed.find((t) => t.id === ciId)!.attributes[ciType.split('.')[1]!]!;
    };
    const outgoing = async (ciId: string) =>
      (
        (await app.current.get(`/api/v1/configuration-items/${ciId}/relationships?direction=outgoing`, admin)).body
          .items as { relationship_type: string; related_ci_type: string }[]
      )
        .map((r) => `${r.relationship_type} ${r.related_ci_type}`)
        .sort();

    it('discovers the server, its targets and the host with real values; a quiet re-collection writes nothing; a target going down is a health change', async () => {
      admin = await createKey(app.current.sql, 'adm');
      const added = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: {
          name: 'prom',
          collector_type: 'prometheus',
          endpoint: stack!.url,
          config: { server_name: 'prom-test' },
        },
      });
      expect(added.status, added.text).to.equal(201);
      source = added.body;

      const first = await collect();
      expect(first.status, first.error).to.equal('succeeded');
      const [server] = await list('prometheus.server');
      expect(server!.name).to.equal('prom-test');
      const build = (await (await fetch(`${stack!.url}/api/v1/status/buildinfo`)).json()) as {
        data: { version: string };
      };
      expect((await typeData('prometheus.server', server!.ci_id)).version).to.equal(build.data.version);

      const targets = await list('prometheus.target');
      expect(targets.map((t) => `${t.namespace} ${t.name}`).sort()).to.deep.equal([
        `node ${stack!.nodeExporter}`,
        `prometheus ${new URL(stack!.url).host}`,
      ]);
      const nodeTarget = targets.find((t) => t.namespace === 'node')!;
      expect(await typeData('prometheus.target', nodeTarget.ci_id)).to.deep.include({
        health: 'up',
        job: 'node',
        instance: stack!.nodeExporter,
      });
      expect(await outgoing(nodeTarget.ci_id)).to.deep.equal(['describes host.linux', 'scraped_by prometheus.server']);

      const [host] = await list('host.linux');
      const hostData = await typeData('host.linux', host!.ci_id);
      expect(hostData.kernel).to.equal(execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim());
      expect(hostData.architecture).to.equal(execFileSync('uname', ['-m'], { encoding: 'utf8' }).trim());
      expect(hostData.cpu_count).to.be.a('number').and.be.above(0);
      expect(hostData.memory_bytes).to.be.a('number').and.be.above(0);
      expect(hostData.network_interfaces).to.be.an('array').that.is.not.empty;
      expect((hostData.metrics as { memory_available_bytes: number }).memory_available_bytes).to.be.above(0);
      // Prometheus reached over loopback scrapes the exporter over loopback: the exporter's machine is this one
      expect(hostData.host).to.deep.equal({
        ...thisMachine(),
        hostname: execFileSync('uname', ['-n'], { encoding: 'utf8' }).trim().toLowerCase(),
        addresses: ['127.0.0.1'],
        endpoint: stack!.nodeExporter,
      });

      await expectDocumentedTypeData(app.current, admin, 'prometheus');

      const quiet = await collect();
      expect(quiet.status).to.equal('succeeded');
      expect(quiet.counts.changes, 'a quiet re-collection writes no change record').to.equal(0);

      await stack!.stopNodeExporter();
      await waitForTargetDown(stack!);
      const afterDown = await collect();
      expect(afterDown.status, afterDown.error).to.equal('succeeded');
      const history = (await app.current.get(`/api/v1/ci-changes/${nodeTarget.ci_id}`, admin)).body.items as {
        change_type: string;
        changes: { field: string; old_value: unknown; new_value: unknown }[];
      }[];
      const update = history.find((c) => c.change_type === 'UPDATED')!;
      expect(update.changes).to.deep.include({ field: 'raw_data.health', old_value: 'up', new_value: 'down' });
    });
  },
);
