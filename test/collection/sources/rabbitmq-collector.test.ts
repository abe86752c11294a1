import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { createKey, useTestApp, type Reply } from '../../support/app.js';
import { describeWith } from '../../support/dependencies.js';
import { thisMachine } from '../../support/local-machine.js';
import { RABBITMQ_SERVER, startPrivateRabbit, type PrivateRabbit } from '../../support/private-rabbitmq.js';
import { expectDocumentedTypeData } from '../../support/type-data.js';

const REASON =
  '(skipped outside CI when RabbitMQ is not installed at /usr/lib/rabbitmq/bin/rabbitmq-server; under CI=true a missing server fails)';

interface Item {
  ci_id: string;
  name: string;
  namespace: string | null;
  status: string;
  last_seen: string;
  raw_data: Record<string, unknown>;
  type_data?: Record<string, unknown>;
}
interface Change {
  change_type: string;
  changes: { field: string; old_value: unknown; new_value: unknown }[] | null;
}

const VHOST = 'cinv/orders';
const v = encodeURIComponent(VHOST);

describeWith(existsSync(RABBITMQ_SERVER))(
  `the rabbitmq collector type against a private RabbitMQ node ${REASON}`,
  function () {
    this.timeout(120_000);
    const app = useTestApp();
    const tag = randomBytes(4).toString('hex');
    // planted in the administrator's password (a secret of the server's own configuration, rabbitmq.conf
    // default_pass) and in the monitoring user's password: neither may reach a response or a log line
    const canary = `canary${randomBytes(8).toString('hex')}`;
    const monitor = { username: 'cinv-monitor', password: `mon-${canary}` };
    const clusterName = `cinv-rabbit-${tag}`;
    const serverName = `rabbit-${tag}`;
    let rabbit: PrivateRabbit;
    let endpoint: string;
    let admin: string;
    let secrets: string[] = [];
    const bodies: string[] = [];

    /** Waits until the management API shows the queues' policies (its statistics catch up every half second here). */
    const settled = async () => {
      for (let waited = 0; waited < 100; waited++) {
        const listed = (await rabbit.api('GET', `/api/queues/${v}`)) as { policy?: string; operator_policy?: string }[];
        if (listed.every((q) => q.policy === 'ttl' && q.operator_policy === 'cap')) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    before(async function () {
      this.timeout(180_000);
      rabbit = await startPrivateRabbit({ adminPassword: `adm-${canary}`, clusterName });
      endpoint = rabbit.url;
      const api = rabbit.api;
      await api('PUT', `/api/vhosts/${v}`, { description: 'orders of the shop', tags: 'prod,eu' });
      await api('PUT', `/api/users/${monitor.username}`, { password: monitor.password, tags: 'monitoring' });
      for (const user of [rabbit.admin.username, monitor.username])
        await api('PUT', `/api/permissions/${v}/${user}`, { configure: '.*', write: '.*', read: '.*' });
      await api('PUT', `/api/users/cinv-app`, { password: `app-${canary}`, tags: '' });
      await api('PUT', `/api/permissions/${v}/cinv-app`, { configure: '^$', write: '^orders$', read: '^orders\\.' });
      await api('PUT', `/api/topic-permissions/${v}/cinv-app`, { exchange: 'orders', write: '^order\\.', read: '.*' });
      await api('PUT', `/api/exchanges/${v}/orders`, { type: 'topic', durable: true });
      await api('PUT', `/api/exchanges/${v}/orders.audit`, { type: 'fanout', durable: true, internal: true });
      await api('PUT', `/api/queues/${v}/orders.created`, { durable: true, arguments: { 'x-max-length': 1000 } });
      await api('PUT', `/api/queues/${v}/orders.ledger`, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      await api('PUT', `/api/queues/${v}/orders.doomed`, { durable: true });
      await api('POST', `/api/bindings/${v}/e/orders/q/orders.created`, { routing_key: 'order.created' });
      await api('POST', `/api/bindings/${v}/e/orders/e/orders.audit`, { routing_key: '#' });
      await api('PUT', `/api/policies/${v}/ttl`, {
        pattern: '^orders\\.',
        'apply-to': 'queues',
        definition: { 'message-ttl': 60000 },
        priority: 1,
      });
      await api('PUT', `/api/operator-policies/${v}/cap`, {
        pattern: '.*',
        'apply-to': 'queues',
        definition: { 'max-length': 100000 },
        priority: 0,
      });
      await settled();
      const users = (await api('GET', '/api/users')) as { password_hash: string }[];
      secrets = [canary, ...users.map((u) => u.password_hash).filter(Boolean)];
    });

    after(async () => {
      await rabbit?.server.destroy();
    });

    beforeEach(async () => {
      admin = await createKey(app.current.sql, 'adm');
      bodies.length = 0;
    });

    const keep = <T>(reply: Reply<T>): Reply<T> => {
      bodies.push(reply.text);
      return reply;
    };
    const get = async (path: string) => keep(await app.current.get(path, admin));
    const collect = async (source: { id: number; collector_id: number }) => {
      const path = `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`;
      const triggered = keep(await app.current.request('POST', path, { key: admin }));
      expect(triggered.status, triggered.text).to.equal(202);
      const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 10_000, pollMs: 60_000 });
      const started = performance.now();
      await worker.tick();
      await worker.idle();
      const took = performance.now() - started;
      await worker.stop();
      const run = (await get(`/api/v1/collection-runs/${triggered.body.run_id}`)).body;
      console.log(`      rabbitmq collection: ${run.status} in ${took.toFixed(0)} ms, ${run.counts?.changes} changes`);
      if (run.status !== 'failed') expect(took, 'a collection of the test node').to.be.below(5000);
      return run;
    };
    const addSource = async (name: string, credentials: object, config: object = {}) => {
      const added = keep(
        await app.current.request('POST', '/api/v1/sources', {
          key: admin,
          body: { name, collector_type: 'rabbitmq', endpoint, config: { server_name: serverName, ...config } },
        }),
      );
      expect(added.status, added.text).to.equal(201);
      const put = await app.current.request('PUT', `/api/v1/sources/${added.body.id}/credentials`, {
        key: admin,
        body: { type: 'basic', ...credentials },
      });
      expect(put.status, put.text).to.equal(204);
      return added.body as { id: number; collector_id: number };
    };
    const items = async (ciType: string): Promise<Item[]> => {
      const list = `/api/v1/configuration-items?status=all&limit=1000&filter=ci_type:eq:${ciType}`;
      const plain = (await get(list)).body.items as Item[];
      const typed = (await get(`${list}&include_type_data=true`)).body.items as {
        id: string;
        attributes: Record<string, unknown>;
      }[];
      const kind = ciType.split('.')[1]!;
      const byId = new Map(typed.map((t) => [t.id, t.attributes[kind] as Record<string, unknown>]));
      return plain.map((item) => ({ ...item, type_data: byId.get(item.ci_id) }));
    };
    const named = async (ciType: string, name: string) => (await items(ciType)).find((i) => i.name === name)!;
    const outgoing = async (ciId: string) =>
      (
        (await get(`/api/v1/configuration-items/${ciId}/relationships?direction=outgoing&limit=100`)).body.items as {
          relationship_type: string;
          related_ci_name: string;
          related_ci_type: string;
        }[]
      )
        .map((r) => `${r.relationship_type} ${r.related_ci_type} ${r.related_ci_name}`)
        .sort();
    const history = async (ciId: string) => (await get(`/api/v1/ci-changes/${ciId}`)).body.items as Change[];
    const expectNoSecrets = () => {
      const everything = [...bodies, ...app.current.logs].join('\n');
      for (const secret of secrets)
        expect(everything.includes(secret), 'a secret in a response or log').to.equal(false);
      expect(everything).to.not.include('password_hash');
    };

    /** The first collection against what the management API and rabbitmqctl report. */
    const expectFirstCollection = async () => {
      const overview = (await rabbit.api('GET', '/api/overview')) as {
        rabbitmq_version: string;
        erlang_version: string;
      };
      const cluster = await named('rabbitmq.cluster', clusterName);
      expect(cluster.type_data).to.deep.include({
        cluster_name: clusterName,
        version: overview.rabbitmq_version,
        erlang_version: overview.erlang_version,
      });
      const node = await named('rabbitmq.node', rabbit.node);
      expect(node.type_data).to.deep.include({ type: 'disc', running: true });
      expect(node.type_data!.enabled_plugins).to.include('rabbitmq_management');
      // rabbit@localhost names no machine; the node answered over loopback, so it is this one
      expect(node.type_data!.host).to.deep.include({ ...thisMachine(), addresses: ['127.0.0.1'] });
      expect((node.type_data!.metrics as Record<string, number>).uptime_seconds).to.be.a('number');
      expect(node.raw_data).to.not.have.property('os_pid');
      expect(await outgoing(node.ci_id)).to.deep.equal([`member_of rabbitmq.cluster ${clusterName}`]);

      const vhost = await named('rabbitmq.vhost', VHOST);
      expect(vhost.type_data).to.deep.include({
        description: 'orders of the shop',
        tags: ['eu', 'prod'],
        tracing: false,
      });

      // the queues as rabbitmqctl, the server's own client, lists them
      const listed = JSON.parse(
        await rabbit.ctl('list_queues', '-p', VHOST, 'name', 'type', 'durable', 'arguments', '--formatter', 'json'),
      ) as { name: string; type: string; durable: boolean }[];
      const queues = (await items('rabbitmq.queue')).filter((q) => q.namespace === VHOST);
      expect(queues.map((q) => q.name).sort()).to.deep.equal(listed.map((q) => q.name).sort());
      for (const q of listed)
        expect(queues.find((i) => i.name === q.name)!.type_data, q.name).to.deep.include({
          type: q.type,
          durable: q.durable,
        });
      const created = queues.find((q) => q.name === 'orders.created')!;
      expect(created.type_data).to.deep.include({
        arguments: { 'x-max-length': 1000 },
        policy: 'ttl',
        operator_policy: 'cap',
        node: rabbit.node,
      });
      expect(await outgoing(created.ci_id)).to.deep.equal([
        `hosted_on rabbitmq.node ${rabbit.node}`,
        `in_vhost rabbitmq.vhost ${VHOST}`,
      ]);

      const bindings = JSON.parse(
        await rabbit.ctl(
          'list_bindings',
          '-p',
          VHOST,
          'source_name',
          'destination_name',
          'routing_key',
          '--formatter',
          'json',
        ),
      ) as { source_name: string; destination_name: string; routing_key: string }[];
      const orders = await named('rabbitmq.exchange', 'orders');
      expect(orders.type_data).to.deep.include({ type: 'topic', durable: true, internal: false, vhost: VHOST });
      expect((orders.raw_data.bindings as { destination: string; routing_key: string }[]).map((b) => b)).to.deep.equal(
        bindings
          .filter((b) => b.source_name === 'orders')
          .map((b) => ({
            destination_type: b.destination_name === 'orders.audit' ? 'exchange' : 'queue',
            destination: b.destination_name,
            routing_key: b.routing_key,
            arguments: {},
          }))
          .sort((a, b) => a.destination_type.localeCompare(b.destination_type)),
      );
      expect(await outgoing(orders.ci_id)).to.deep.equal([
        `in_vhost rabbitmq.vhost ${VHOST}`,
        'routes_to rabbitmq.exchange orders.audit',
        'routes_to rabbitmq.queue orders.created',
      ]);
    };

    /** Users with their permissions, and policies, as they were declared. */
    const expectAccess = async () => {
      const appUser = await named('rabbitmq.user', 'cinv-app');
      expect(appUser.raw_data).to.deep.equal({
        tags: [],
        limits: {},
        permissions: [{ vhost: VHOST, configure: '^$', write: '^orders$', read: '^orders\\.' }],
        topic_permissions: [{ vhost: VHOST, exchange: 'orders', write: '^order\\.', read: '.*' }],
      });
      expect(await outgoing(appUser.ci_id)).to.deep.equal([`can_access rabbitmq.vhost ${VHOST}`]);
      expect((await named('rabbitmq.user', monitor.username)).type_data!.tags).to.deep.equal(['monitoring']);

      const policies = (await items('rabbitmq.policy')).filter((p) => p.namespace === VHOST);
      expect(policies.map((p) => [p.name, p.type_data!.operator, p.type_data!.pattern]).sort()).to.deep.equal([
        ['cap', true, '.*'],
        ['ttl', false, '^orders\\.'],
      ]);
      expect(await outgoing(policies[0]!.ci_id)).to.deep.equal([`applies_in rabbitmq.vhost ${VHOST}`]);
      await expectDocumentedTypeData(app.current, admin, 'rabbitmq');
    };

    /** Messages published move metrics only. */
    const expectOnlyMetricsMove = async (source: { id: number; collector_id: number }) => {
      for (let i = 0; i < 3; i++)
        await rabbit.api('POST', `/api/exchanges/${v}/amq.default/publish`, {
          properties: {},
          routing_key: 'orders.created',
          payload: `order ${i}`,
          payload_encoding: 'string',
        });
      for (let waited = 0; waited < 50; waited++) {
        const q = (await rabbit.api('GET', `/api/queues/${v}/orders.created`)) as { messages?: number };
        if (q.messages === 3) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      const quiet = await collect(source);
      expect(quiet.status, quiet.error).to.equal('succeeded');
      if (quiet.counts.changes) console.log(JSON.stringify((await get('/api/v1/changes?limit=3')).body.items, null, 1));
      expect(quiet.counts.changes).to.equal(0);
      const filled = await named('rabbitmq.queue', 'orders.created');
      expect((filled.type_data!.metrics as Record<string, number>).messages).to.equal(3);
    };

    /** A queue declared, bound, unbound; another deleted: exactly the expected change records. */
    const expectBindingChanges = async (source: { id: number; collector_id: number }) => {
      const orders = await named('rabbitmq.exchange', 'orders');
      // a queue declared and bound: one CREATED, and one UPDATED of the exchange's bindings
      await rabbit.api('PUT', `/api/queues/${v}/orders.refunds`, { durable: true });
      await rabbit.api('POST', `/api/bindings/${v}/e/orders/q/orders.refunds`, { routing_key: 'order.refunded' });
      await settled();
      const third = await collect(source);
      expect(third.status, third.error).to.equal('succeeded');
      expect(third.counts.changes).to.equal(2);
      const refunds = await named('rabbitmq.queue', 'orders.refunds');
      expect((await history(refunds.ci_id)).map((c) => c.change_type)).to.deep.equal(['CREATED']);
      const bound = (await history(orders.ci_id)).filter((c) => c.change_type === 'UPDATED');
      expect(bound).to.have.length(1);
      expect(bound[0]!.changes!.map((c) => c.field)).to.deep.equal(['raw_data.bindings']);
      expect(bound[0]!.changes![0]!.new_value).to.deep.include.members([
        { destination_type: 'queue', destination: 'orders.refunds', routing_key: 'order.refunded', arguments: {} },
      ]);
      expect(await outgoing(orders.ci_id)).to.include('routes_to rabbitmq.queue orders.refunds');

      // unbound again, and a queue deleted: one UPDATED; the deleted queue ages through the snapshot rules
      await rabbit.api('DELETE', `/api/bindings/${v}/e/orders/q/orders.refunds/order.refunded`);
      const doomed = await named('rabbitmq.queue', 'orders.doomed');
      await rabbit.api('DELETE', `/api/queues/${v}/orders.doomed`);
      app.current.clock.now = new Date(app.current.clock.now.getTime() + 60_000);
      const fourth = await collect(source);
      expect(fourth.status, fourth.error).to.equal('succeeded');
      expect(fourth.counts.changes).to.equal(1);
      const unbound = (await history(orders.ci_id)).filter((c) => c.change_type === 'UPDATED');
      expect(unbound).to.have.length(2);
      expect(await outgoing(orders.ci_id)).to.not.include('routes_to rabbitmq.queue orders.refunds');
      const gone = await named('rabbitmq.queue', 'orders.doomed');
      expect(gone.status).to.equal('active');
      expect(gone.last_seen).to.equal(doomed.last_seen);
    };

    /** The server stops: the run fails with a message for people, the source is degraded, nothing is archived. */
    const expectOutage = async (source: { id: number; collector_id: number }) => {
      await rabbit.server.stop();
      try {
        const down = await collect(source);
        expect(down.status).to.equal('failed');
        expect(down.error).to.equal(`no server answers at 127.0.0.1:${rabbit.managementPort}`);
        // a failed run marks the source's health unhealthy (a partial one degraded), with the same message
        const detail = (await get(`/api/v1/sources/${source.id}`)).body;
        expect(detail.health_status.status).to.equal('unhealthy');
        expect(detail.health_status.details.message).to.equal(down.error);
        const all = (await get('/api/v1/configuration-items?status=all&limit=1000')).body.items as Item[];
        expect(all.filter((i) => i.status !== 'active')).to.deep.equal([]);
        expect(down.counts.changes).to.equal(0);
      } finally {
        await rabbit.server.start();
        await settled();
      }
      const back = await collect(source);
      expect(back.status, back.error).to.equal('succeeded');
      if (back.counts.changes)
        console.log(JSON.stringify((await get('/api/v1/changes?limit=1')).body.items[0].changes));
      expect(back.counts.changes).to.equal(0);
    };

    it('discovers the cluster, nodes, virtual hosts, exchanges, queues, users and policies, and records what changed', async () => {
      const source = await addSource(`rabbit-${tag}`, rabbit.admin);
      const first = await collect(source);
      expect(first.status, first.error).to.equal('succeeded');
      await expectFirstCollection();
      await expectAccess();
      await expectOnlyMetricsMove(source);
      await expectBindingChanges(source);
      await expectOutage(source);
      expectNoSecrets();
    });

    it('collects with a user tagged monitoring only, the parts it may not read reported by name', async () => {
      const everything = await addSource(`rabbit-monitor-${tag}`, monitor);
      const partial = await collect(everything);
      expect(partial.status).to.equal('partial');
      expect(partial.error).to.include('users: the server at 127.0.0.1:');
      expect(partial.error).to.not.include('policies');
      const detail = (await get(`/api/v1/sources/${everything.id}`)).body;
      expect(detail.health_status.status).to.equal('degraded');
      expect(detail.health_status.components.queues).to.deep.equal({ status: 'healthy' });
      expect(detail.health_status.components.users.status).to.equal('unhealthy');
      expect((await items('rabbitmq.queue')).map((q) => q.name)).to.include('orders.created');

      const monitoring = await addSource(`rabbit-least-${tag}`, monitor, {
        server_name: `${serverName}-least`,
        enabled_collectors: ['cluster', 'nodes', 'vhosts', 'exchanges', 'queues', 'policies', 'operator_policies'],
      });
      const run = await collect(monitoring);
      expect(run.status, run.error).to.equal('succeeded');
      expectNoSecrets();
    });

    it('fails a run whose credentials the server refuses with a clear message', async () => {
      const source = await addSource(`rabbit-wrong-${tag}`, {
        username: monitor.username,
        password: `wrong-${canary}`,
      });
      const run = await collect(source);
      expect(run.status).to.equal('failed');
      expect(run.error).to.equal(`the server at 127.0.0.1:${rabbit.managementPort} refused the credentials`);
      expect((await get(`/api/v1/sources/${source.id}`)).body.health_status.status).to.equal('unhealthy');
      expect((await get('/api/v1/configuration-items?status=all&limit=10')).body.items).to.deep.equal([]);
      secrets.push(`wrong-${canary}`);
      expectNoSecrets();
    });
  },
);
