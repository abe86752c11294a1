import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';

/** A database server's CI as the postgresql and mariadb collector types write it: the port it answers on, its host. */
export const server = (
  ciType: 'postgresql.server' | 'mariadb.server',
  name: string,
  port: number,
  host: { hostname: string | null; addresses: string[]; machine_id: string | null },
  serverUuid: string | null = null,
): UniversalRecord => ({
  external_id: 'server',
  ci_type: ciType,
  name,
  namespace: null,
  raw_data: ciType === 'postgresql.server' ? { settings: { port: String(port) } } : { variables: { port } },
  type_data: {
    version: ciType === 'postgresql.server' ? '15.19' : '8.0.36',
    max_connections: 100,
    ...(ciType === 'mariadb.server' ? { flavour: 'mysql', server_uuid: serverUuid } : { replication_role: 'primary' }),
    host: { ...host, product_uuid: null, endpoint: `${host.addresses[0]}:${port}` },
  },
});
