import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { isLoopback } from '../../../src/collection/types/shared/host.js';
import { createKey, useTestApp } from '../../support/app.js';
import { describeWith, listening } from '../../support/dependencies.js';
import { thisMachine } from '../../support/local-machine.js';
import { expectDocumentedTypeData } from '../../support/type-data.js';

/** The real PostgreSQL server the collector discovers (whatever database the app itself runs on). */
const SERVER_URL = process.env.CINV_TEST_PG_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REASON =
  '(skipped outside CI when no PostgreSQL server answers at CINV_TEST_PG_SERVER_URL; under CI=true a missing server fails)';

interface Item {
  ci_id: string;
  name: string;
  namespace: string | null;
  status: string;
  last_seen: string;
  raw_data: Record<string, unknown>;
  /** From the type-data shape of the list (`include_type_data`), under the kind's name. */
  type_data?: Record<string, unknown>;
}

describeWith(listening(SERVER_URL, 5432))(
  `the postgresql collector type against the machine's real PostgreSQL ${REASON}`,
  function () {
    this.timeout(60_000);
    const app = useTestApp();
    const tag = randomBytes(4).toString('hex');
    const database = `cinv_pgc_${tag}`;
    const role = `cinv_pgc_role_${tag}`;
    const group = `cinv_pgc_group_${tag}`;
    const locked = `cinv_pgc_locked_${tag}`;
    const serverName = `pg-${tag}`;
    let server: postgres.Sql | undefined;
    let admin: string;
    let endpoint: string;

    before(async () => {
      server = postgres(SERVER_URL, { max: 1, onnotice: () => {}, connect_timeout: 3 });
      try {
        await server`select 1`;
      } catch (error) {
        await server.end({ timeout: 0 });
        server = undefined;
        throw new Error(`no PostgreSQL server answers at ${SERVER_URL}`, { cause: error });
      }
      const url = new URL(SERVER_URL);
      endpoint = `postgres://${url.hostname}:${url.port || 5432}`;
      await server.unsafe(`create role ${group} nologin`);
      await server.unsafe(`create role ${role} login connection limit 5 in role ${group}`);
      await server.unsafe(`create database ${database} owner ${role}`);
      await server.unsafe(`create database ${locked}`);
      const inside = postgres({ ...connectionOf(SERVER_URL), database, max: 1, onnotice: () => {} });
      try {
        await inside`create extension if not exists pg_trgm`;
      } finally {
        await inside.end();
      }
    });

    after(async () => {
      if (!server) return;
      for (const name of [database, locked]) await server.unsafe(`drop database if exists ${name} with (force)`);
      for (const name of [role, group]) await server.unsafe(`drop role if exists ${name}`);
      await server.end();
    });

    beforeEach(async () => {
      admin = await createKey(app.current.sql, 'adm');
    });

    const collect = async (collectorId: number, sourceId: number) => {
      const triggered = await app.current.request(
        'POST',
        `/api/v1/collectors/${collectorId}/trigger?source_id=${sourceId}`,
        { key: admin },
      );
      expect(triggered.status, triggered.text).to.equal(202);
      const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 10_000, pollMs: 60_000 });
      await worker.tick();
      await worker.idle();
      await worker.stop();
      return (await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin)).body;
    };
    const items = async (ciType: string): Promise<Item[]> => {
      const list = `/api/v1/configuration-items?status=all&limit=1000&filter=ci_type:eq:${ciType}`;
      const plain = (await app.current.get(list, admin)).body.items as Item[];
      const typed = (await app.current.get(`${list}&include_type_data=true`, admin)).body.items as {
        id: string;
        attributes: Record<string, unknown>;
      }[];
      const kind = ciType.split('.')[1]!;
      const byId = new Map(typed.map((t) => [t.id, t.attributes[kind] as Record<string, unknown>]));
      return plain.map((item) => ({ ...item, type_data: byId.get(item.ci_id) }));
    };
    const named = async (ciType: string, name: string) => (await items(ciType)).find((i) => i.name === name)!;
    /** The host facts the server's own answers call for: what it listens on and answered from, this machine's ids over loopback. */
    const expectedHost = async () => {
      const [{ listen, answered }] = (await server!`
        select current_setting('listen_addresses') as listen, host(inet_server_addr()) as answered`) as unknown as [
        { listen: string; answered: string | null },
      ];
      const url = new URL(endpoint);
      const listed = listen.split(/[\s,]+/).filter((a) => !['', '*', '0.0.0.0', '::'].includes(a));
      const here = isLoopback(url.hostname) ? thisMachine() : { hostname: null, machine_id: null, product_uuid: null };
      return {
        ...here,
        addresses: [...new Set([...listed, ...(answered ? [answered] : [])])].sort(),
        endpoint: url.host,
      };
    };
    const outgoing = async (ciId: string) => {
      const reply = await app.current.get(
        `/api/v1/configuration-items/${ciId}/relationships?direction=outgoing&limit=100`,
        admin,
      );
      expect(reply.status, reply.text).to.equal(200);
      return (reply.body.items as { relationship_type: string; related_ci_name: string; related_ci_type: string }[])
        .map((r) => `${r.relationship_type} ${r.related_ci_type} ${r.related_ci_name}`)
        .sort();
    };

    it('discovers the server, its databases, roles and extensions with their relationships, and records what changed', async () => {
      const added = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: {
          name: `pg-${tag}`,
          collector_type: 'postgresql',
          endpoint,
          config: { server_name: serverName, sslmode: 'disable' },
        },
      });
      expect(added.status, added.text).to.equal(201);
      const source = added.body as { id: number; collector_id: number };
      const url = new URL(SERVER_URL);
      const credentials = {
        type: 'basic',
        username: decodeURIComponent(url.username) || 'postgres',
        password: decodeURIComponent(url.password) || 'unused-with-trust-auth',
      };
      expect(
        (
          await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
            key: admin,
            body: credentials,
          })
        ).status,
      ).to.equal(204);

      const first = await collect(source.collector_id, source.id);
      expect(first.status, first.error).to.equal('succeeded');

      const [{ version }] = (await server!`select current_setting('server_version') as version`) as unknown as [
        { version: string },
      ];
      const found = await named('postgresql.server', serverName);
      expect(found.type_data).to.deep.include({ version, replication_role: 'primary' });
      expect((found.type_data!.metrics as { uptime_seconds: number }).uptime_seconds).to.be.a('number');
      expect(found.type_data!.host).to.deep.equal(await expectedHost());

      const db = await named('postgresql.database', database);
      expect(db.type_data).to.deep.include({ owner: role, is_template: false });
      expect((db.type_data!.metrics as { size_bytes: number }).size_bytes).to.be.above(0);
      expect(await outgoing(db.ci_id)).to.deep.equal([
        `hosted_on postgresql.server ${serverName}`,
        `owned_by postgresql.role ${role}`,
      ]);

      const member = await named('postgresql.role', role);
      expect(member.type_data).to.deep.include({
        login: true,
        superuser: false,
        connection_limit: 5,
        member_of: [group],
      });
      expect(await outgoing(member.ci_id)).to.deep.equal([`member_of postgresql.role ${group}`]);

      const trgm = (await items('postgresql.extension')).find((e) => e.name === 'pg_trgm' && e.namespace === database)!;
      expect(trgm, 'pg_trgm in the new database').to.not.equal(undefined);
      expect(await outgoing(trgm.ci_id)).to.deep.equal([`installed_in postgresql.database ${database}`]);

      await expectDocumentedTypeData(app.current, admin, 'postgresql');

      // the role changes, the database goes
      await server!.unsafe(`alter role ${role} nologin connection limit 10`);
      await server!.unsafe(`drop database ${database} with (force)`);
      app.current.clock.now = new Date(app.current.clock.now.getTime() + 60_000);
      const second = await collect(source.collector_id, source.id);
      expect(second.status, second.error).to.equal('succeeded');
      const changed = await named('postgresql.role', role);
      const history = (await app.current.get(`/api/v1/ci-changes/${changed.ci_id}`, admin)).body.items as {
        change_type: string;
        changes: { field: string; old_value: unknown; new_value: unknown }[];
      }[];
      const update = history.find((c) => c.change_type === 'UPDATED')!;
      expect(update.changes).to.deep.include.members([
        { field: 'raw_data.login', old_value: true, new_value: false },
        { field: 'raw_data.connection_limit', old_value: 5, new_value: 10 },
      ]);
      // a dropped database is not seen any more: it ages through the snapshot rules, it is not archived now
      const gone = await named('postgresql.database', database);
      expect(gone.status).to.equal('active');
      expect(gone.last_seen).to.equal(db.last_seen);

      // nothing moved: a third collection writes no change record
      const third = await collect(source.collector_id, source.id);
      expect(third.status).to.equal('succeeded');
      expect(third.counts.changes).to.equal(0);
    });

    it('records host facts that stay as they are while the metrics move', async () => {
      const added = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: {
          name: `pg-host-${tag}`,
          collector_type: 'postgresql',
          endpoint,
          config: { server_name: `${serverName}-host`, sslmode: 'disable', enabled_collectors: ['server'] },
        },
      });
      expect(added.status, added.text).to.equal(201);
      const source = added.body as { id: number; collector_id: number };
      await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
        key: admin,
        body: { type: 'basic', username: connectionOf(SERVER_URL).username, password: 'unused-with-trust-auth' },
      });
      const first = await collect(source.collector_id, source.id);
      expect(first.status, first.error).to.equal('succeeded');
      const before = await named('postgresql.server', `${serverName}-host`);
      expect(before.type_data!.host).to.deep.equal(await expectedHost());

      // more clients, and time passing: only metrics move
      const clients = postgres({ ...connectionOf(SERVER_URL), database: 'postgres', max: 3, onnotice: () => {} });
      try {
        const held = await Promise.all([1, 2, 3].map(() => clients.reserve()));
        await Promise.all(held.map((connection) => connection`select 1`));
        await new Promise((resolve) => setTimeout(resolve, 1100));
        app.current.clock.now = new Date(app.current.clock.now.getTime() + 60_000);
        const second = await collect(source.collector_id, source.id);
        expect(second.status, second.error).to.equal('succeeded');
        expect(second.counts.changes, 'metrics alone write no change record').to.equal(0);
      } finally {
        await clients.end({ timeout: 0 });
      }
      const after = await named('postgresql.server', `${serverName}-host`);
      const metrics = (item: Item) => item.type_data!.metrics as { client_connections: number; uptime_seconds: number };
      expect(metrics(after).client_connections).to.be.above(metrics(before).client_connections);
      expect(metrics(after).uptime_seconds).to.be.above(metrics(before).uptime_seconds);
      expect(after.type_data!.host).to.deep.equal(before.type_data!.host);
      const history = (await app.current.get(`/api/v1/ci-changes/${after.ci_id}`, admin)).body.items as {
        change_type: string;
      }[];
      expect(history.map((c) => c.change_type)).to.deep.equal(['CREATED']);
    });

    it('makes the run partial when one database refuses the collector, keeping every other part', async () => {
      await server!.unsafe(`alter database ${locked} connection limit 0`);
      await server!.unsafe(`alter role ${role} login`);
      const added = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: {
          name: `pg-partial-${tag}`,
          collector_type: 'postgresql',
          endpoint,
          config: { server_name: `${serverName}-partial`, sslmode: 'disable' },
        },
      });
      const source = added.body as { id: number; collector_id: number };
      // an ordinary role: the connection limit of 0 stops it (a superuser would pass)
      await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
        key: admin,
        body: { type: 'basic', username: role, password: 'unused-with-trust-auth' },
      });
      const run = await collect(source.collector_id, source.id);
      expect(run.status, run.error).to.equal('partial');
      expect(run.error).to.include(`extensions:${locked}`);
      const detail = (await app.current.get(`/api/v1/sources/${source.id}`, admin)).body;
      expect(detail.health_status.status).to.equal('degraded');
      expect(detail.health_status.components[`extensions:${locked}`].status).to.equal('unhealthy');
      expect(detail.health_status.components.roles).to.deep.equal({ status: 'healthy' });
      expect((await items('postgresql.server')).map((s) => s.name)).to.include(`${serverName}-partial`);
      expect((await app.current.get(`/api/v1/collectors/${source.collector_id}/health`, admin)).body.status).to.equal(
        'degraded',
      );
    });

    it('refuses an endpoint of another scheme and a token credential with clear errors', async () => {
      const wrong = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: `pg-http-${tag}`, collector_type: 'postgresql', endpoint: 'https://db.example.com' },
      });
      expect(wrong.status).to.equal(422);
      expect(wrong.body.error.details.errors[0].field).to.equal('endpoint');
      const added = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: `pg-token-${tag}`, collector_type: 'postgresql', endpoint, config: { sslmode: 'disable' } },
      });
      await app.current.request('PUT', `/api/v1/sources/${added.body.id}/credentials`, {
        key: admin,
        body: { type: 'token', token: 'not-for-postgres' },
      });
      const run = await collect(added.body.collector_id, added.body.id);
      expect(run.status).to.equal('failed');
      expect(run.error).to.include('basic');
    });
  },
);

function connectionOf(url: string) {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 5432),
    username: decodeURIComponent(parsed.username) || 'postgres',
    password: decodeURIComponent(parsed.password) || undefined,
  };
}
