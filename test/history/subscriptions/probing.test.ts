import { expect } from 'chai';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { AllowedHosts, isPublicAddress } from '../../../src/platform/net/endpoint.js';
import { SubscriptionDelivery } from '../../../src/history/subscriptions/delivery.js';
import { NATS_NOT_TAKEN, NatsConnections, NOT_TAKEN } from '../../../src/history/subscriptions/sinks.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';

const listen = async (server: Server | ReturnType<typeof createHttpServer>, host = '127.0.0.1'): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
};
const closeServer = (server: Server | ReturnType<typeof createHttpServer>) =>
  new Promise<void>((resolve) => server.close(() => resolve()));

/** A port nothing listens on: one just given up. */
async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await closeServer(server);
  return port;
}

/**
 * Webhooks as a port scanner: a key that may write subscriptions points them at internal ports and
 * reads the answers of the test route and the deliveries log. A refused connection, a hang-up, a
 * service that does not speak HTTP and a loopback receiver's HTTP status must all read the same.
 */
describe('change subscriptions: webhook answers do not map internal ports', function () {
  this.timeout(60_000);
  let app: TestApp;
  let admin: string;
  const servers: (Server | ReturnType<typeof createHttpServer>)[] = [];
  const sockets = new Set<Socket>();

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    // the default policy: loopback and private receivers are reachable (CINV_SOURCE_ALLOW_PRIVATE), none is listed
    app = await startTestApp({ webhookTimeoutMs: 1_000 });
    admin = await createKey(app.sql, 'adm');
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all(servers.map(closeServer));
    await app.close();
  });

  /** A loopback TCP service that does `onConnection` with every connection. */
  async function tcpService(onConnection: (socket: Socket) => void): Promise<number> {
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      onConnection(socket);
    });
    servers.push(server);
    return listen(server);
  }

  async function httpReceiver(status: number): Promise<number> {
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.statusCode = status;
        res.end('internal admin console');
      });
    });
    servers.push(server);
    return listen(server);
  }

  const subscribe = async (name: string, port: number) => {
    const made = await app.request('POST', '/api/v1/subscriptions', {
      key: admin,
      body: { name, sink: { type: 'webhook', url: `http://127.0.0.1:${port}/` } },
    });
    expect(made.status, made.text).to.equal(201);
    return made.body.id as string;
  };

  it("answers the test of a closed port, a hang-up, a service that is not HTTP, a silent one and a loopback receiver's status alike, and logs the detail", async () => {
    const targets = {
      closed: await closedPort(),
      'hang-up': await tcpService((socket) => socket.destroy()),
      'not http': await tcpService((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n')),
      silent: await tcpService(() => undefined),
      'http 503': await httpReceiver(503),
      'http 401': await httpReceiver(401),
    };
    const answers: Record<string, unknown> = {};
    for (const [name, port] of Object.entries(targets)) {
      const id = await subscribe(`probe ${name}`, port);
      const tested = await app.request('POST', `/api/v1/subscriptions/${id}/test`, { key: admin });
      expect(tested.status, tested.text).to.equal(200);
      answers[name] = {
        delivered: tested.body.delivered,
        response_status: tested.body.response_status,
        error: tested.body.error,
      };
    }
    for (const name of Object.keys(targets)) {
      expect(answers[name], name).to.deep.equal({ delivered: false, response_status: null, error: NOT_TAKEN });
    }
    // what happened exactly is in the server log, for the operator
    const logged = app.logs.filter((line) => line.includes('subscription message not delivered')).join('\n');
    expect(logged).to.include('ECONNREFUSED');
    expect(logged).to.include('answered 503');
    expect(logged).to.include('answered 401');

    // a receiver that takes the message is told apart (delivered), still without its status
    const fine = await subscribe('probe fine', await httpReceiver(204));
    const delivered = await app.request('POST', `/api/v1/subscriptions/${fine}/test`, { key: admin });
    expect(delivered.body).to.deep.include({ delivered: true, response_status: null, error: null });
  });

  it("keeps the deliveries log as coarse as the test, and the subscription's state too", async () => {
    const closed = await subscribe('log closed', await closedPort());
    const notHttp = await subscribe(
      'log not http',
      await tcpService((socket) => socket.end('\x00\x00\x00\x08garbage')),
    );
    const refusing = await subscribe('log 500', await httpReceiver(500));
    await ingest(app.sql, [buildPod({ name: 'probed' })], { source: 'sub-probe' });
    const delivery = new SubscriptionDelivery(app.context);
    try {
      await delivery.tick();
      await delivery.settle();
      for (const id of [closed, notHttp, refusing]) {
        const log = (await app.get(`/api/v1/subscriptions/${id}/deliveries`, admin)).body.items;
        expect(log, id).to.have.length(1);
        expect(log[0]).to.deep.include({ status: 'pending', attempts: 1, response_status: null, error: NOT_TAKEN });
      }
      // dead-lettered: the state's reason carries the same coarse error
      await app.sql`update subscription_deliveries set next_attempt_at = now() - interval '1 hour', retry_since = now() - interval '25 hours' where subscription_id = ${closed}`;
      await delivery.tick();
      await delivery.settle();
      const failing = (await app.get(`/api/v1/subscriptions/${closed}`, admin)).body;
      expect(failing.state).to.equal('failing');
      expect(failing.state_reason).to.equal(`batch 1 dead-lettered: ${NOT_TAKEN}`);
    } finally {
      await delivery.stop();
    }
  });
});

describe('change subscriptions: a receiver on a non-public address needs access to all data', function () {
  this.timeout(60_000);

  for (const listed of [false, true]) {
    it(`refuses a scoped owner's loopback receiver${listed ? ' unless its network is listed in CINV_SOURCE_ALLOWED_HOSTS' : ''}, on saving and on sending, and stores nothing`, async () => {
      const { sql } = await testDatabase();
      await resetDatabase(sql);
      const app = await startTestApp(listed ? { sourceAllowedHosts: ['127.0.0.0/8'] } : {});
      let received = 0;
      const receiver = createHttpServer((req, res) => {
        received++;
        req.resume();
        res.end();
      });
      try {
        const port = await listen(receiver);
        const { sourceId } = await ingest(app.sql, [buildPod({ name: 'seen' })], { scopeId: 'c1' });
        const scoped = await createKey(app.sql, 'svc', {
          permissions: ['subscriptions:write', 'subscriptions:read', 'changes:read'],
          scopes: [{ sourceId, scopeId: 'c1' }],
        });
        const admin = await createKey(app.sql, 'adm');
        const body = (name: string) => ({ name, sink: { type: 'webhook', url: `http://127.0.0.1:${port}/hook` } });
        const byScoped = await app.request('POST', '/api/v1/subscriptions', { key: scoped, body: body('scoped') });
        const stored = async () =>
          (await app.sql<{ name: string }[]>`select name from subscriptions order by name`).map((row) => row.name);
        if (listed) {
          expect(byScoped.status, byScoped.text).to.equal(201);
          const tested = await app.request('POST', `/api/v1/subscriptions/${byScoped.body.id}/test`, { key: scoped });
          expect(tested.body.delivered, tested.text).to.equal(true);
          expect(received).to.equal(1);
          return;
        }
        expect(byScoped.status, byScoped.text).to.equal(403);
        expect(byScoped.body.error.details).to.deep.include({ reason: 'private_receiver' });
        expect(await stored()).to.deep.equal([]);
        // an administrator may; once it is the scoped key's (its owner narrowed later), sending refuses the receiver
        const byAdmin = await app.request('POST', '/api/v1/subscriptions', { key: admin, body: body('admin') });
        expect(byAdmin.status, byAdmin.text).to.equal(201);
        const [keyRow] = await app.sql<{ id: string }[]>`select id::text from api_keys where tier = 'svc'`;
        await app.sql`update subscriptions set owner_kind = 'api_key', owner_id = ${keyRow!.id}`;
        const tested = await app.request('POST', `/api/v1/subscriptions/${byAdmin.body.id}/test`, { key: admin });
        expect(tested.status, tested.text).to.equal(200);
        expect(tested.body.delivered).to.equal(false);
        expect(received).to.equal(0);
      } finally {
        await closeServer(receiver);
        await app.close();
      }
    });
  }
});

describe('change subscriptions: whose HTTP status is shown', () => {
  it('takes as public only public unicast addresses, whatever way a non-public one is written', () => {
    for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '[2a00:1450:4001:80b::200e]'])
      expect(isPublicAddress(address), address).to.equal(true);
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.9',
      '192.168.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '169.254.169.254',
      '::1',
      '[::1]',
      'fd12::1',
      'fe80::1%eth0',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '64:ff9b::a00:1',
      '2002:c0a8:101::1',
      'localhost',
      '',
    ]) {
      expect(isPublicAddress(address), address).to.equal(false);
    }
  });
});

/**
 * A fake NATS server: it sends INFO advertising another server (`connect_urls`), answers PING with
 * PONG, and after the handshake drops the connection and stops listening, so that a client that
 * took the advertised server into its pool goes there to reconnect.
 */
class FakeNatsServer {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly advertised: string) {
    this.server = createServer((socket) => this.serve(socket));
  }

  async start(): Promise<void> {
    // every address `localhost` may resolve to (dual stack)
    await new Promise<void>((resolve) => this.server.listen(0, resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    const info = {
      server_id: 'FAKE',
      server_name: 'fake',
      version: '2.10.0',
      proto: 1,
      host: '127.0.0.1',
      port: this.port,
      headers: true,
      max_payload: 1_048_576,
      connect_urls: [this.advertised],
    };
    socket.write(`INFO ${JSON.stringify(info)}\r\n`);
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      let end: number;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (line === 'PING') {
          socket.write('PONG\r\n');
          // the handshake is done: go away, for good
          setTimeout(() => void this.stop(), 100);
        }
      }
    });
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    if (this.server.listening) await closeServer(this.server);
  }
}

describe('change subscriptions: a NATS sink follows no server a NATS server advertises', function () {
  this.timeout(30_000);

  it('never connects to the connect_urls a fake NATS server sends in its INFO (CINV_SOURCE_ALLOWED_HOSTS=localhost)', async () => {
    let advertisedConnections = 0;
    const elsewhere = createServer((socket) => {
      advertisedConnections++;
      socket.destroy();
    });
    const elsewherePort = await listen(elsewhere);
    const fake = new FakeNatsServer(`127.0.0.1:${elsewherePort}`);
    await fake.start();
    const nats = new NatsConnections();
    try {
      const result = await nats.publish(
        { type: 'nats', url: `nats://localhost:${fake.port}`, subject: 'cinv.changes' },
        { messageId: 'msg_fake_1', body: '{}' },
        { allowedHosts: new AllowedHosts(['localhost']), timeoutMs: 3_000, now: new Date() },
      );
      expect(result.ok).to.equal(false);
      expect(result.error).to.equal(NATS_NOT_TAKEN);
      // the client reconnects meanwhile, to the address that was checked only
      await sleep(1_000);
      expect(advertisedConnections).to.equal(0);
    } finally {
      await nats.close();
      await fake.stop();
      await closeServer(elsewhere);
    }
  });
});
