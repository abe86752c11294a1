import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { catchUpIdentities } from '../../../src/inventory/identities/service.js';
import { createKey, useTestApp } from '../../support/app.js';
import { describeWith, listening } from '../../support/dependencies.js';
import { mariadbInstalled, startPrivateMariadb, type PrivateMariadb } from '../../support/private-mariadb.js';
import { NATS_SERVER, startPrivateNats, type PrivateNats } from '../../support/private-nats.js';
import type { PrivateProcess } from '../../support/private-process.js';
import { RABBITMQ_SERVER, startPrivateRabbit, type PrivateRabbit } from '../../support/private-rabbitmq.js';
import { REDIS_SERVER, startRedis } from '../../support/private-redis.js';
import {
  NODE_EXPORTER_BIN,
  PROMETHEUS_BIN,
  startPrometheusStack,
  type PrometheusStack,
} from '../../support/prometheus.js';

/** The machine's real PostgreSQL server, as the postgresql collector's suite reaches it. */
const PG_SERVER_URL = process.env.CINV_TEST_PG_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** What each collector type needs on this machine; outside CI a missing one is left out of the suite. */
const PRESENT = {
  prometheus: Boolean(PROMETHEUS_BIN && NODE_EXPORTER_BIN),
  postgresql: listening(PG_SERVER_URL, 5432),
  redis: existsSync(REDIS_SERVER),
  mariadb: mariadbInstalled(),
  nats: Boolean(NATS_SERVER),
  rabbitmq: existsSync(RABBITMQ_SERVER),
};
type Kind = keyof typeof PRESENT;
/** The CI type each collector type observes this machine with. */
const HOST_CI_TYPE: Record<Kind, string> = {
  prometheus: 'host.linux',
  postgresql: 'postgresql.server',
  redis: 'redis.server',
  mariadb: 'mariadb.server',
  nats: 'nats.server',
  rabbitmq: 'rabbitmq.node',
};
const IN_CI = process.env.CI === 'true';
const KINDS = (Object.keys(PRESENT) as Kind[]).filter((kind) => PRESENT[kind] || IN_CI);

const REASON =
  '(outside CI a collector type whose server is not installed is left out, and the suite is skipped with fewer than two; under CI=true a missing one fails)';

interface Field {
  value: unknown;
  source_id: string;
  ci_id: string;
  reason: string;
  competing: { value: unknown; source_id: string; ci_id: string }[];
}
interface Detail {
  kind: string;
  fields: Record<string, Field>;
  observations: { ci_id: string; ci_type: string; source_id: string; role: string }[];
}
type Json = Record<string, any>;

const normalisedId = (id: string) => id.trim().toLowerCase().replace(/[{}-]/g, '');
const publicAddress = (a: string) => !/^127\./.test(a) && a !== '::1';

/**
 * What one CI says of a host field, read from its type_data as its collector type stored it: a
 * node_exporter host for itself, a server for the machine it runs on (`host`).
 */
function reported(ciType: string, typeData: Json, field: string): unknown {
  const host = (typeData.host ?? {}) as Json;
  const own: Json =
    ciType === 'host.linux'
      ? {
          hostname: typeData.hostname,
          'os.name': typeData.os_name,
          'os.version': String(typeData.os_version ?? '').match(/\d+(?:\.\d+)*/)?.[0],
          kernel: typeData.kernel,
          architecture: typeData.architecture,
          cpu_count: typeData.cpu_count,
          memory_bytes: typeData.memory_bytes,
        }
      : {};
  const facts: Json = {
    hostname: host.hostname,
    addresses: ((host.addresses ?? []) as string[]).filter(publicAddress),
    machine_id: host.machine_id ? normalisedId(host.machine_id) : undefined,
    product_uuid: host.product_uuid ? normalisedId(host.product_uuid) : undefined,
  };
  return field in own && own[field] !== undefined ? own[field] : facts[field];
}

describeWith(KINDS.length >= 2)(
  `one host identity of this machine from real collectors of several types ${REASON}`,
  function () {
    this.timeout(120_000);
    const app = useTestApp();
    const tag = randomBytes(4).toString('hex');
    const password = `collector-${randomBytes(8).toString('hex')}`;
    let prometheus: PrometheusStack | undefined;
    let redis: PrivateProcess | undefined;
    let mariadb: PrivateMariadb | undefined;
    let nats: PrivateNats | undefined;
    let rabbit: PrivateRabbit | undefined;

    before(async function () {
      this.timeout(120_000);
      const want = (kind: Kind) => KINDS.includes(kind);
      // started side by side: RabbitMQ takes longest, the others are up long before it
      await Promise.all([
        want('prometheus') && startPrometheusStack().then((s) => (prometheus = s)),
        want('redis') && startRedis(`redis-identity`).then((s) => (redis = s)),
        want('mariadb') &&
          startPrivateMariadb('mariadb-identity').then(async (server) => {
            mariadb = server;
            const root = await server.client();
            try {
              await root.query(`CREATE USER 'cinv'@'127.0.0.1' IDENTIFIED BY '${password}'`);
              await root.query(`GRANT SELECT ON mysql.* TO 'cinv'@'127.0.0.1'`);
              await root.query(
                `GRANT SHOW DATABASES, SHOW VIEW, SLAVE MONITOR, REPLICATION MASTER ADMIN ON *.* TO 'cinv'@'127.0.0.1'`,
              );
            } finally {
              await root.end();
            }
          }),
        want('nats') && startPrivateNats({ serverName: `nats-${tag}` }).then((s) => (nats = s)),
        want('rabbitmq') &&
          startPrivateRabbit({ adminPassword: `adm-${password}`, clusterName: `rabbit-${tag}` }).then(
            (s) => (rabbit = s),
          ),
      ]);
    });
    after(async () => {
      await Promise.all([prometheus?.stop(), redis?.destroy(), mariadb?.destroy(), nats?.destroy()]);
      await rabbit?.server.destroy();
    });

    /** A source of the kind on its server here, with the credentials it needs. */
    const sourceOf = (kind: Kind): { endpoint: string; config: Json; credentials?: Json } => {
      if (kind === 'prometheus') return { endpoint: prometheus!.url, config: { server_name: `prom-${tag}` } };
      if (kind === 'postgresql') {
        const url = new URL(PG_SERVER_URL);
        return {
          endpoint: `postgres://${url.hostname}:${url.port || 5432}`,
          config: { server_name: `pg-${tag}`, sslmode: 'disable', enabled_collectors: ['server'] },
          credentials: { type: 'basic', username: url.username || 'postgres', password: 'unused-with-trust-auth' },
        };
      }
      if (kind === 'redis') return { endpoint: `redis://127.0.0.1:${redis!.port}`, config: {} };
      if (kind === 'mariadb')
        return {
          endpoint: `mysql://127.0.0.1:${mariadb!.port}`,
          config: { server_name: `mariadb-${tag}` },
          credentials: { type: 'basic', username: 'cinv', password },
        };
      if (kind === 'nats') return { endpoint: nats!.monitorUrl, config: { server_name: `nats-${tag}` } };
      return {
        endpoint: rabbit!.url,
        config: { server_name: `rabbit-${tag}` },
        credentials: { type: 'basic', ...rabbit!.admin },
      };
    };

    /** A source of the kind collected once; `as` names another source of the same server, reached elsewhere. */
    const collect = async (admin: string, kind: Kind, as?: { name: string; endpoint: string }): Promise<string> => {
      const own = sourceOf(kind);
      const { credentials } = own;
      const endpoint = as?.endpoint ?? own.endpoint;
      const config = as ? { ...own.config, server_name: as.name } : own.config;
      const added = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: as?.name ?? `${kind}-${tag}`, collector_type: kind, endpoint, config },
      });
      expect(added.status, added.text).to.equal(201);
      const source = added.body as { id: number; collector_id: number };
      if (credentials) {
        const put = await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
          key: admin,
          body: credentials,
        });
        expect(put.status, put.text).to.equal(204);
      }
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
      const run = (await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin)).body;
      expect(run.status, `${kind}: ${run.error}`).to.equal('succeeded');
      return String(source.id);
    };

    it("links every collector type's observation of this machine into one host identity, each field from a CI that reported it", async () => {
      const admin = await createKey(app.current.sql, 'adm');
      const sources = new Map<Kind, string>();
      for (const kind of KINDS) sources.set(kind, await collect(admin, kind));
      await catchUpIdentities(app.current.sql, () => app.current.clock.now);

      const listed = await app.current.get('/api/v1/identities?filter=kind:eq:host&limit=100', admin);
      expect(listed.status, listed.text).to.equal(200);
      const identities = listed.body.items as { id: string; observation_count: number }[];
      expect(identities, 'one host identity of this machine').to.have.lengthOf(1);
      const reply = await app.current.get(`/api/v1/identities/${identities[0]!.id}`, admin);
      expect(reply.status, reply.text).to.equal(200);
      const identity = reply.body as Detail;

      // one observation per collector type, each the CI its own source stored
      const observed = identity.observations.map((o) => `${o.ci_type} ${o.source_id}`).sort();
      expect(observed).to.deep.equal(KINDS.map((kind) => `${HOST_CI_TYPE[kind]} ${sources.get(kind)}`).sort());
      expect(identities[0]!.observation_count).to.equal(KINDS.length);
      for (const o of identity.observations)
        expect(o.role, o.ci_type).to.equal(o.ci_type === 'host.linux' ? 'self' : 'runs-on');

      const here = hostname().toLowerCase().replace(/\.$/, '');
      const machineId = normalisedId(readFileSync('/etc/machine-id', 'utf8'));
      expect(identity.fields.machine_id?.value).to.equal(machineId);
      // node_exporter names the machine by its own uname; a server's name for itself (a NATS server_name) comes after it
      if (KINDS.includes('prometheus'))
        expect(identity.fields.hostname).to.deep.include({
          value: here,
          source_id: sources.get('prometheus'),
          reason: 'precedence',
        });
      else expect(identity.fields.hostname).to.not.equal(undefined);
      if (KINDS.includes('nats') && KINDS.includes('prometheus'))
        expect(identity.fields.hostname!.competing.map((c) => [c.value, c.source_id])).to.deep.include([
          `nats-${tag}`,
          sources.get('nats'),
        ]);

      const typeData = new Map<string, Json>();
      for (const o of identity.observations) {
        const ci = await app.current.get(`/api/v1/configuration-items/${o.ci_id}`, admin);
        expect(ci.status, ci.text).to.equal(200);
        expect(String(ci.body.source.id)).to.equal(o.source_id);
        expect(ci.body.identity?.id, 'the CI names its identity').to.equal(identities[0]!.id);
        typeData.set(o.ci_id, ci.body.type_data as Json);
        // each server was reached over loopback: its collector recorded this machine's id, the identity's
        expect(reported(o.ci_type, ci.body.type_data as Json, 'machine_id'), o.ci_type).to.equal(machineId);
      }
      const typeOf = new Map(identity.observations.map((o) => [o.ci_id, o]));
      for (const [name, field] of Object.entries(identity.fields)) {
        const by = typeOf.get(field.ci_id);
        expect(by, `${name}: its ci_id is one of the observations`).to.not.equal(undefined);
        expect(field.source_id, `${name}: the source of ${by!.ci_type}`).to.equal(by!.source_id);
        expect(
          reported(by!.ci_type, typeData.get(field.ci_id)!, name),
          `${name} as ${by!.ci_type} reported it`,
        ).to.deep.equal(field.value);
        for (const other of field.competing) {
          const of = typeOf.get(other.ci_id)!;
          expect(other.source_id).to.equal(of.source_id);
          expect(reported(of.ci_type, typeData.get(other.ci_id)!, name), `${name} competing`).to.deep.equal(
            other.value,
          );
        }
      }
      // every observation that knows the machine id says the same: none competes
      expect(identity.fields.machine_id!.competing).to.deep.equal([]);

      const conflicts = await app.current.get('/api/v1/identities/conflicts', admin);
      expect(conflicts.status, conflicts.text).to.equal(200);
      expect(conflicts.body.items, 'nothing for a person to review').to.deep.equal([]);
    });

    it('recognises each database server as one identity, the PostgreSQL server read by two sources as one', async () => {
      const admin = await createKey(app.current.sql, 'adm');
      const servers = (['postgresql', 'redis', 'mariadb'] as const).filter((kind) => KINDS.includes(kind));
      const sources = new Map<string, string>();
      for (const kind of servers)
        sources.set(kind, await collect(admin, kind, { name: `${kind}-db-${tag}`, endpoint: sourceOf(kind).endpoint }));
      // the same PostgreSQL server once more, by name rather than by address, as a second team's source would
      const url = new URL(PG_SERVER_URL);
      if (servers.includes('postgresql'))
        sources.set(
          'postgresql again',
          await collect(admin, 'postgresql', {
            name: `postgresql-again-${tag}`,
            endpoint: `postgres://localhost:${url.port || 5432}`,
          }),
        );
      await catchUpIdentities(app.current.sql, () => app.current.clock.now);

      const listed = await app.current.get('/api/v1/identities?filter=kind:eq:database-server&limit=100', admin);
      expect(listed.status, listed.text).to.equal(200);
      const mine = [];
      for (const item of listed.body.items as { id: string }[]) {
        const detail = (await app.current.get(`/api/v1/identities/${item.id}`, admin)).body as Detail;
        const own = detail.observations.filter((o) => [...sources.values()].includes(o.source_id));
        if (own.length > 0) mine.push({ detail, own });
      }
      const bySource = (d: Detail) => d.observations.map((o) => o.source_id).sort();
      const expected = servers.map((kind) =>
        kind === 'postgresql'
          ? [sources.get('postgresql')!, sources.get('postgresql again')!].sort()
          : [sources.get(kind)!],
      );
      expect(mine.map((m) => bySource(m.detail)).sort(), 'one identity per server, whoever read it').to.deep.equal(
        expected.sort(),
      );
      for (const { detail } of mine) {
        expect(detail.kind).to.equal('database-server');
        const ci = (await app.current.get(`/api/v1/configuration-items/${detail.observations[0]!.ci_id}`, admin)).body;
        const port = ci.ci_type === 'postgresql.server' ? Number(ci.raw_data.settings.port) : undefined;
        if (port !== undefined) expect(detail.fields.port?.value).to.equal(port);
        expect(detail.fields.product?.value).to.equal(
          ci.ci_type === 'mariadb.server' ? ci.type_data.flavour : ci.ci_type.split('.')[0],
        );
        // it names both of its identities: the server it is and the host it runs on
        expect(ci.identities.map((i: { kind: string; role: string }) => `${i.kind} ${i.role}`)).to.deep.equal([
          'host runs-on',
          'database-server self',
        ]);
      }
    });
  },
);
