import { AckPolicy, DeliverPolicy, jetstreamManager, jetstream, StorageType } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { createKey, useTestApp, type Reply } from '../../support/app.js';
import { describeWith } from '../../support/dependencies.js';
import { thisMachine } from '../../support/local-machine.js';
import { NATS_SERVER, startPrivateNats, type PrivateNats } from '../../support/private-nats.js';
import { freePort } from '../../support/private-process.js';
import { expectDocumentedTypeData } from '../../support/type-data.js';

const REASON = '(skipped outside CI when nats-server is not installed; under CI=true a missing one fails)';

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
type Run = { status: string; error: string | null; counts: { changes: number; received: number } };

describeWith(NATS_SERVER !== undefined)(
  `the nats collector type against a private nats-server with JetStream ${REASON}`,
  function () {
    this.timeout(60_000);
    const app = useTestApp();
    const tag = randomBytes(4).toString('hex');
    const serverName = `cinv-nats-${tag}`;
    // planted where a secret sits: a user's password, a leaf node remote's URL, the source's own credentials
    const canaries = [`pw-canary-${tag}-a1`, `leaf-canary-${tag}-b2`, `cred-canary-${tag}-c3`];
    let nats: PrivateNats;
    let app_: NatsConnection;
    let ops: NatsConnection;
    let admin: string;
    const replies: string[] = [];
    const durations: number[] = [];

    before(async () => {
      const deadPort = await freePort();
      nats = await startPrivateNats({
        serverName,
        extra: () => `
accounts {
  APP: { jetstream: enabled, users: [ { user: app, password: "${canaries[0]}" } ] }
  OPS: { jetstream: { max_mem: 8MB, max_file: 64MB }, users: [ { user: ops, password: "ops-${tag}" } ] }
  SYS: { users: [ { user: sys, password: "sys-${tag}" } ] }
}
system_account: SYS
leafnodes { remotes: [ { url: "nats-leaf://leaf:${canaries[1]}@127.0.0.1:${deadPort}", account: APP } ] }
`,
      });
      app_ = await connect({ servers: nats.clientUrl, user: 'app', pass: canaries[0] });
      ops = await connect({ servers: nats.clientUrl, user: 'ops', pass: `ops-${tag}` });
      const jsm = await jetstreamManager(app_);
      await jsm.streams.add({ name: 'ORDERS', subjects: ['orders.>'], max_age: 3600e9, max_msgs: 1000 });
      await jsm.consumers.add('ORDERS', {
        durable_name: 'shipper',
        ack_policy: AckPolicy.Explicit,
        filter_subject: 'orders.new',
        max_deliver: 5,
      });
      // an ephemeral consumer comes and goes with its client: not recorded
      await jsm.consumers.add('ORDERS', { ack_policy: AckPolicy.Explicit, inactive_threshold: 600e9 });
      await jsm.streams.add({ name: 'EVENTS', subjects: ['events.*'], storage: StorageType.Memory });
      await jsm.streams.add({ name: 'ORDERS_COPY', mirror: { name: 'ORDERS' } });
      const opsJsm = await jetstreamManager(ops);
      await opsJsm.streams.add({ name: 'AUDIT', subjects: ['audit.>'], max_bytes: 1_000_000 });
      await opsJsm.consumers.add('AUDIT', {
        durable_name: 'reader',
        ack_policy: AckPolicy.None,
        deliver_policy: DeliverPolicy.Last,
      });
      await jetstream(app_).publish('orders.new', 'first');
    });

    after(async () => {
      await app_?.close();
      await ops?.close();
      await nats?.destroy();
      if (durations.length > 0)
        console.log(`      nats collections took ${durations.map((d) => `${d} ms`).join(', ')}`);
    });

    beforeEach(async () => {
      admin = await createKey(app.current.sql, 'adm');
    });

    /** Every reply the test reads, kept for the canary check. */
    const call = async (method: string, path: string, body?: unknown): Promise<Reply> => {
      const reply = await app.current.request(method, path, { key: admin, body });
      replies.push(reply.text);
      return reply;
    };
    const addSource = async (name: string, endpoint: string, credentials?: Record<string, string>) => {
      const added = await call('POST', '/api/v1/sources', {
        name,
        collector_type: 'nats',
        endpoint,
        config: { server_name: name },
      });
      expect(added.status, added.text).to.equal(201);
      if (credentials) {
        const put = await call('PUT', `/api/v1/sources/${added.body.id}/credentials`, credentials);
        expect(put.status, put.text).to.equal(204);
      }
      return added.body as { id: number; collector_id: number };
    };
    const collect = async (source: { id: number; collector_id: number }): Promise<Run> => {
      const triggered = await call('POST', `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`);
      expect(triggered.status, triggered.text).to.equal(202);
      const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 10_000, pollMs: 60_000 });
      const started = performance.now();
      await worker.tick();
      await worker.idle();
      durations.push(Math.round(performance.now() - started));
      await worker.stop();
      app.current.clock.now = new Date(app.current.clock.now.getTime() + 60_000);
      return (await call('GET', `/api/v1/collection-runs/${triggered.body.run_id}`)).body as Run;
    };
    const items = async (ciType: string): Promise<Item[]> => {
      const list = `/api/v1/configuration-items?status=all&limit=1000&filter=ci_type:eq:${ciType}`;
      const plain = (await call('GET', list)).body.items as Item[];
      const typed = (await call('GET', `${list}&include_type_data=true`)).body.items as {
        id: string;
        attributes: Record<string, unknown>;
      }[];
      const kind = ciType.split('.')[1]!;
      const byId = new Map(typed.map((t) => [t.id, t.attributes[kind] as Record<string, unknown>]));
      return plain.map((item) => ({ ...item, type_data: byId.get(item.ci_id) }));
    };
    const named = async (ciType: string, name: string) => {
      const found = (await items(ciType)).find((i) => i.name === name);
      expect(found, `${ciType} ${name}`).to.not.equal(undefined);
      return found!;
    };
    const outgoing = async (ciId: string) => {
      const reply = await call('GET', `/api/v1/configuration-items/${ciId}/relationships?direction=outgoing&limit=100`);
      expect(reply.status, reply.text).to.equal(200);
      return (reply.body.items as { relationship_type: string; related_ci_name: string; related_ci_type: string }[])
        .map((r) => `${r.relationship_type} ${r.related_ci_type} ${r.related_ci_name}`)
        .sort();
    };
    const history = async (ciId: string) => (await call('GET', `/api/v1/ci-changes/${ciId}`)).body.items as Change[];
    const varz = async () => (await (await fetch(`${nats.monitorUrl}/varz`)).json()) as Record<string, any>;
    const expectNoCanary = () => {
      const seen = [...replies, ...app.current.logs].join('\n');
      for (const canary of canaries)
        expect(seen.includes(canary), `${canary} in a reply or a log line`).to.equal(false);
    };

    it('discovers the server, accounts, streams and consumers as the server reports them, and records what changed', async () => {
      const source = await addSource(serverName, nats.monitorUrl, {
        type: 'basic',
        username: 'inventory',
        password: canaries[2]!,
      });
      const first = await collect(source);
      expect(first.status, first.error ?? '').to.equal('succeeded');

      const reported = await varz();
      const server = await named('nats.server', serverName);
      expect(server.type_data).to.deep.include({
        version: reported.version,
        server_name: serverName,
        jetstream_enabled: true,
        jetstream_max_memory: reported.jetstream.config.max_memory,
        jetstream_max_storage: reported.jetstream.config.max_storage,
        max_payload: reported.max_payload,
        auth_required: true,
      });
      const { machine_id, product_uuid } = thisMachine();
      expect(server.type_data!.host).to.deep.include({
        hostname: serverName,
        addresses: ['127.0.0.1'],
        machine_id,
        product_uuid,
      });
      const metrics = server.type_data!.metrics as Record<string, unknown>;
      expect(metrics.uptime_seconds).to.be.a('number');
      expect(metrics.connections).to.equal(reported.connections);
      expect(metrics.server_id).to.equal(reported.server_id);
      expect(server.raw_data).to.not.have.property('server_id');
      // the leaf node remote whose URL holds a password is recorded, without it
      expect((server.raw_data.leaf as { remotes: { urls: string[] }[] }).remotes[0]!.urls[0]).to.match(
        /^127\.0\.0\.1:\d+$/,
      );

      const accountNames = ((await (await fetch(`${nats.monitorUrl}/accountz`)).json()) as { accounts: string[] })
        .accounts;
      expect((await items('nats.account')).map((a) => a.name).sort()).to.deep.equal([...accountNames].sort());
      const opsAccount = await named('nats.account', 'OPS');
      expect(opsAccount.type_data).to.deep.include({
        jetstream_enabled: true,
        jetstream_max_memory: 8 * 1024 * 1024,
        jetstream_max_storage: 64 * 1024 * 1024,
      });
      expect((await named('nats.account', 'SYS')).type_data).to.deep.include({ system_account: true });

      const jsm = await jetstreamManager(app_);
      const orders = await jsm.streams.info('ORDERS');
      const stream = await named('nats.stream', 'ORDERS');
      expect(stream.namespace).to.equal('APP');
      expect(stream.type_data).to.deep.include({
        account: 'APP',
        subjects: orders.config.subjects,
        retention: orders.config.retention,
        storage: orders.config.storage,
        replicas: orders.config.num_replicas,
        discard: orders.config.discard,
        max_msgs: orders.config.max_msgs,
        max_age_seconds: orders.config.max_age / 1e9,
        max_bytes: null,
      });
      expect(stream.type_data!.metrics).to.deep.include({ messages: orders.state.messages, consumer_count: 2 });
      expect(await outgoing(stream.ci_id)).to.deep.equal([
        'belongs_to nats.account APP',
        `hosted_on nats.server ${serverName}`,
      ]);
      const copy = await named('nats.stream', 'ORDERS_COPY');
      expect(copy.type_data).to.deep.include({ mirror: 'ORDERS' });
      expect(await outgoing(copy.ci_id)).to.include('replicates_from nats.stream ORDERS');
      expect((await named('nats.stream', 'AUDIT')).namespace).to.equal('OPS');

      const shipperInfo = await jsm.consumers.info('ORDERS', 'shipper');
      const shipper = await named('nats.consumer', 'shipper');
      expect(shipper.type_data).to.deep.include({
        stream: 'ORDERS',
        durable_name: 'shipper',
        ack_policy: shipperInfo.config.ack_policy,
        deliver_policy: shipperInfo.config.deliver_policy,
        filter_subjects: [shipperInfo.config.filter_subject],
        max_deliver: shipperInfo.config.max_deliver,
      });
      expect(shipper.type_data!.metrics).to.deep.include({ num_pending: shipperInfo.num_pending });
      expect(await outgoing(shipper.ci_id)).to.deep.equal(['consumes nats.stream ORDERS']);
      expect((await items('nats.consumer')).map((c) => c.name).sort()).to.deep.equal(['reader', 'shipper']);
      const reader = await named('nats.consumer', 'reader');
      expect(reader.type_data).to.deep.include({ ack_policy: 'none', deliver_policy: 'last', stream: 'AUDIT' });
      await expectDocumentedTypeData(app.current, admin, 'nats');

      // messages move only metrics: no change record
      for (let i = 0; i < 3; i++) await jetstream(app_).publish('orders.new', `more ${i}`);
      const second = await collect(source);
      expect(second.status, second.error ?? '').to.equal('succeeded');
      expect(second.counts.changes).to.equal(0);
      expect((await named('nats.stream', 'ORDERS')).type_data!.metrics).to.deep.include({ messages: 4 });

      // a stream added, one deleted, a limit raised
      await jsm.streams.add({ name: 'INVOICES', subjects: ['invoices.>'] });
      await jsm.streams.delete('EVENTS');
      await jsm.streams.update('ORDERS', { max_age: 7200e9 });
      const eventsBefore = await named('nats.stream', 'EVENTS');
      const third = await collect(source);
      expect(third.status, third.error ?? '').to.equal('succeeded');
      expect(third.counts.changes).to.equal(2);
      const updates = (await history(stream.ci_id)).filter((c) => c.change_type === 'UPDATED');
      expect(updates).to.have.length(1);
      expect(updates[0]!.changes).to.deep.include({
        field: 'raw_data.config.max_age',
        old_value: 3600e9,
        new_value: 7200e9,
      });
      expect(
        updates[0]!.changes!.every((c) => /max_age/.test(c.field)),
        JSON.stringify(updates[0]),
      ).to.equal(true);
      const created = await named('nats.stream', 'INVOICES');
      expect((await history(created.ci_id)).map((c) => c.change_type)).to.deep.equal(['CREATED']);
      // a deleted stream is not seen any more: it ages through the snapshot rules, it is not archived now
      const events = await named('nats.stream', 'EVENTS');
      expect(events.status).to.equal('active');
      expect(events.last_seen).to.equal(eventsBefore.last_seen);

      expect((await call('GET', '/api/v1/changes?limit=1000')).status).to.equal(200);
      await call('GET', `/api/v1/sources/${source.id}`);
      expectNoCanary();
    });

    it('fails the run with a clear message when the server is down, archiving nothing, and carries on once it is back', async () => {
      const source = await addSource(`${serverName}-outage`, nats.monitorUrl);
      expect((await collect(source)).status).to.equal('succeeded');
      const before = await items('nats.stream');
      await nats.stop();
      let down: Run;
      try {
        down = await collect(source);
      } finally {
        await nats.start();
      }
      expect(down.status).to.equal('failed');
      expect(down.error).to.equal(`no server answers at 127.0.0.1:${nats.port}`);
      const detail = (await call('GET', `/api/v1/sources/${source.id}`)).body;
      // a failed run makes the source unhealthy, and its collector degraded
      expect(detail.health_status.status).to.equal('unhealthy');
      expect(detail.last_error).to.equal(down.error);
      const collector = await call('GET', `/api/v1/collectors/${source.collector_id}/health`);
      expect(collector.body.status).to.equal('degraded');
      const after = await items('nats.stream');
      expect(after.map((i) => [i.name, i.status, i.last_seen])).to.deep.equal(
        before.map((i) => [i.name, i.status, i.last_seen]),
      );
      // a restart gives the server a new id: a metric, not a configuration change
      const again = await collect(source);
      expect(again.status, again.error ?? '').to.equal('succeeded');
      expect(again.counts.changes).to.equal(0);
      expectNoCanary();
    });

    it('reports refused credentials from a proxy in front of the monitoring port, and a failing page as a partial run', async () => {
      const proxy = await authProxy(nats.port, `inventory:good-${tag}`, `token-${tag}`);
      try {
        const wrong = await addSource(`${serverName}-wrong`, proxy.url, {
          type: 'basic',
          username: 'inventory',
          password: canaries[2]!,
        });
        const refused = await collect(wrong);
        expect(refused.status).to.equal('failed');
        expect(refused.error).to.equal(`the server at 127.0.0.1:${proxy.port} refused the credentials (HTTP 401)`);
        expect((await call('GET', `/api/v1/sources/${wrong.id}`)).body.health_status.status).to.equal('unhealthy');

        const none = await collect(await addSource(`${serverName}-none`, proxy.url));
        expect(none.error).to.equal(
          `the server at 127.0.0.1:${proxy.port} asks for credentials (HTTP 401); none are set`,
        );

        const token = await addSource(`${serverName}-token`, proxy.url, { type: 'token', token: `token-${tag}` });
        proxy.failing = '/jsz?acc=OPS';
        const partial = await collect(token);
        expect(partial.status).to.equal('partial');
        expect(partial.error).to.equal('streams:OPS: /jsz answered HTTP 500');
        const health = (await call('GET', `/api/v1/sources/${token.id}`)).body.health_status;
        expect(health.status).to.equal('degraded');
        expect(health.components['streams:OPS'].status).to.equal('unhealthy');
        expect(health.components.streams).to.deep.equal({ status: 'healthy' });
        expect((await items('nats.stream')).map((s) => s.name))
          .to.include('ORDERS')
          .and.not.include('AUDIT');

        const client = await addSource(`${serverName}-client-port`, nats.clientUrl.replace('nats:', 'http:'));
        const wrongPort = await collect(client);
        expect(wrongPort.status).to.equal('failed');
        expect(wrongPort.error).to.match(/does not answer HTTP: is it the client port/);
      } finally {
        await proxy.close();
      }
      expectNoCanary();
    });
  },
);

/**
 * A reverse proxy that asks for credentials, as operators put in front of the monitoring port
 * (nats-server has no authentication of its own there); `failing` makes one path answer 500.
 */
async function authProxy(target: number, basic: string, token: string) {
  const expected = new Set([`Basic ${Buffer.from(basic).toString('base64')}`, `Bearer ${token}`]);
  const state = { failing: undefined as string | undefined };
  const server: Server = createServer((req, res) => {
    if (!expected.has(req.headers.authorization ?? '')) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="nats"' }).end();
      return;
    }
    if (state.failing && req.url?.startsWith(state.failing)) {
      res.writeHead(500).end();
      return;
    }
    const upstream = request({ host: '127.0.0.1', port: target, path: req.url, method: 'GET' }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    upstream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(state, {
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
