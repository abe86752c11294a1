import type { UniversalRecord } from '../../inventory/write-path/records.js';
import { hostFacts } from '../types/shared/host.js';

/**
 * The demo's Prometheus and PostgreSQL, as records shaped like those the `prometheus` and
 * `postgresql` collector types store (see their records.ts): a Prometheus scraping a node_exporter
 * on every node of both clusters, with each host's facts, and one PostgreSQL server with its
 * databases, roles and extensions.
 */
export interface FleetState {
  /** node name → whether its exporter answers. */
  hosts: Map<string, boolean>;
  /** node name → the product UUID its exporter's node_dmi_info reports (of the machine it last saw there). */
  productUuids: Map<string, string>;
  prometheusVersion: string;
  maxConnections: number;
  roleLimits: Map<string, number>;
  extensions: Map<string, string>;
}

export function prometheusRecords(state: FleetState): UniversalRecord[] {
  const server: UniversalRecord = {
    external_id: 'server',
    ci_type: 'prometheus.server',
    name: 'prometheus-demo',
    raw_data: {
      build: { version: state.prometheusVersion, revision: 'd4e5f6a', branch: 'HEAD', goVersion: 'go1.22.6' },
      runtime: {
        storageRetention: '15d',
        lastConfigTime: '2026-01-01T00:00:00Z',
        reloadConfigSuccess: true,
        startTime: '2026-01-01T00:00:00Z',
      },
    },
    type_data: {
      version: state.prometheusVersion,
      revision: 'd4e5f6a',
      go_version: 'go1.22.6',
      storage_retention: '15d',
      config_reload_ok: true,
    },
  };
  const records = [server];
  for (const [host, up] of [...state.hosts].sort(([a], [b]) => a.localeCompare(b))) {
    const instance = `${host}:9100`;
    const large = Number(host.slice(-2)) % 3 === 0;
    const attributes = {
      hostname: host,
      os_name: 'Bottlerocket OS',
      os_version: '1.20.3',
      kernel: '6.1.102',
      architecture: 'x86_64',
      cpu_count: large ? 16 : 8,
      memory_bytes: (large ? 64 : 32) * 2 ** 30,
    };
    const filesystems = [{ mountpoint: '/', device: '/dev/nvme0n1p1', fstype: 'ext4', size_bytes: 100 * 2 ** 30 }];
    records.push({
      external_id: `host/${instance}`,
      ci_type: 'host.linux',
      name: host,
      raw_data: {
        uname: { nodename: host, release: '6.1.102', machine: 'x86_64', sysname: 'Linux' },
        os: { name: 'Bottlerocket OS', version: '1.20.3' },
        ...attributes,
        filesystems,
      },
      type_data: {
        ...attributes,
        instance,
        filesystems,
        host: exporterHost(state, host, instance),
        metrics: { load1: 0.4 },
      },
    });
    records.push({
      external_id: `target/node/http://${instance}/metrics`,
      ci_type: 'prometheus.target',
      name: instance,
      namespace: 'node',
      raw_data: {
        scrapePool: 'node',
        scrapeUrl: `http://${instance}/metrics`,
        labels: { instance, job: 'node' },
        health: up ? 'up' : 'down',
        lastError: up ? '' : `Get "http://${instance}/metrics": dial tcp: connect: connection refused`,
        scrapeInterval: '30s',
        scrapeTimeout: '10s',
      },
      type_data: { job: 'node', instance, health: up ? 'up' : 'down' },
      relationships: [
        { type: 'scraped_by', target_external_id: 'server' },
        { type: 'describes', target_external_id: `host/${instance}` },
      ],
    });
  }
  return records;
}

/** A node_exporter host's facts as the prometheus type records them, the product UUID from node_dmi_info. */
const exporterHost = (state: FleetState, host: string, instance: string) =>
  hostFacts({
    hostname: host,
    addresses: [host],
    product_uuid: state.productUuids.get(host) ?? null,
    endpoint: instance,
  });

const DATABASES = ['orders', 'catalog', 'payments'];

export function postgresqlRecords(state: FleetState): UniversalRecord[] {
  return [
    serverRecord(state),
    ...roleRecords(state),
    ...DATABASES.flatMap((database) => databaseRecords(state, database)),
  ];
}

function serverRecord(state: FleetState): UniversalRecord {
  return {
    external_id: 'server',
    ci_type: 'postgresql.server',
    name: 'pg-demo-primary',
    raw_data: {
      version: '16.4',
      version_num: 160004,
      in_recovery: false,
      started_at: '2026-01-01T00:00:00.000Z',
      settings: {
        max_connections: String(state.maxConnections),
        shared_buffers: '4GB',
        wal_level: 'replica',
        data_checksums: 'on',
        server_encoding: 'UTF8',
        ssl: 'on',
      },
    },
    type_data: {
      version: '16.4',
      max_connections: state.maxConnections,
      shared_buffers: '4GB',
      wal_level: 'replica',
      replication_role: 'primary',
      host: hostFacts({ endpoint: 'pg-demo-primary.demo.invalid:5432' }),
    },
  };
}

/** The two group roles, and each database's application and read-only roles in them. */
function roleRecords(state: FleetState): UniversalRecord[] {
  return [...state.roleLimits]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([role, limit]) => {
      const group = role === 'app_readers' || role === 'app_writers';
      const memberOf = group ? [] : role.endsWith('_ro') ? ['app_readers'] : ['app_writers'];
      return {
        external_id: `role/${role}`,
        ci_type: 'postgresql.role',
        name: role,
        raw_data: {
          login: !group,
          superuser: false,
          createdb: false,
          createrole: false,
          replication: false,
          inherit: true,
          connection_limit: limit,
          member_of: memberOf,
        },
        type_data: { login: !group, superuser: false, createdb: false, connection_limit: limit, member_of: memberOf },
        relationships: memberOf.map((g) => ({ type: 'member_of', target_external_id: `role/${g}` })),
      };
    });
}

/** A database and the extensions installed in it (the same in every database). */
function databaseRecords(state: FleetState, database: string): UniversalRecord[] {
  const owner = `${database}_app`;
  const records: UniversalRecord[] = [
    {
      external_id: `database/${database}`,
      ci_type: 'postgresql.database',
      name: database,
      raw_data: {
        datname: database,
        owner,
        encoding: 'UTF8',
        collation: 'en_US.UTF-8',
        ctype: 'en_US.UTF-8',
        connection_limit: -1,
        allow_connections: true,
        is_template: false,
      },
      type_data: { owner, encoding: 'UTF8', collation: 'en_US.UTF-8', connection_limit: -1, is_template: false },
      relationships: [
        { type: 'hosted_on', target_external_id: 'server' },
        { type: 'owned_by', target_external_id: `role/${owner}` },
      ],
    },
  ];
  for (const [extension, version] of state.extensions) {
    records.push({
      external_id: `extension/${database}/${extension}`,
      ci_type: 'postgresql.extension',
      name: extension,
      namespace: database,
      raw_data: { version, schema: 'public', relocatable: extension !== 'plpgsql' },
      type_data: { version, schema: 'public', database },
      relationships: [{ type: 'installed_in', target_external_id: `database/${database}` }],
    });
  }
  return records;
}

/** The fleet's start: every node's exporter answering, with the product UUID of the machine under it. */
export function initialFleet(nodes: { name: string; productUuid: string }[]): FleetState {
  return {
    hosts: new Map(nodes.map((node) => [node.name, true])),
    productUuids: new Map(nodes.map((node) => [node.name, node.productUuid])),
    prometheusVersion: '2.53.1',
    maxConnections: 200,
    roleLimits: new Map([
      ['app_readers', -1],
      ['app_writers', -1],
      ...DATABASES.map((d) => [`${d}_app`, 50] as [string, number]),
      ...DATABASES.map((d) => [`${d}_ro`, 20] as [string, number]),
    ]),
    extensions: new Map([
      ['plpgsql', '1.0'],
      ['pg_stat_statements', '1.10'],
      ['pgcrypto', '1.3'],
    ]),
  };
}
