import type { IdentityKey, IdentityKind } from './rules.js';

/** A CI as the identity worker reads it. */
export interface ObservedCi {
  ci_id: string;
  tenant_id: string;
  source_id: string;
  scope_id: string | null;
  ci_type: string;
  name: string;
  status: string;
  updated_at: Date;
  raw_data: Record<string, unknown>;
  type_data: Record<string, unknown>;
}

/**
 * What one CI tells of one real thing: its identifying keys and the fields it reports. A CI that
 * is the thing (a `k8s.node`, a `host.linux`, a `postgresql.server`) observes it as `self`; a server
 * also observes the host it runs on (`runs-on`), from the host facts its collector type records
 * under `type_data.host`.
 */
export interface Facet {
  ciId: string;
  kind: IdentityKind;
  role: 'self' | 'runs-on';
  keys: Partial<Record<IdentityKey, string[]>>;
  fields: Record<string, unknown>;
}

type Json = Record<string, unknown>;
const object = (value: unknown): Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
const text = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
const count = (value: unknown): number | null => {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  return Number.isFinite(n) ? n : null;
};

/** Names every machine answers to: never evidence that two observations are one machine. */
const SHARED_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback']);

/** A host name as identification compares it: lower case, no trailing dot; null for names every machine has. */
export function hostnameKey(value: unknown): string | null {
  const name = text(value)?.toLowerCase().replace(/\.$/, '');
  return name && !SHARED_NAMES.has(name) ? name : null;
}

/**
 * An address as identification compares it; null for addresses that say nothing of which machine
 * it is: loopback, link-local, unspecified.
 */
export function addressKey(value: unknown): string | null {
  const address = text(value)
    ?.toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (!address) return null;
  if (/^127\./.test(address) || address === '::1' || address === '0.0.0.0' || address === '::') return null;
  if (/^169\.254\./.test(address) || /^fe80:/.test(address)) return null;
  return address;
}

/** A machine id or product UUID as compared: lower case, without dashes or braces. */
export function machineKey(value: unknown): string | null {
  const id = text(value)?.toLowerCase().replace(/[{}-]/g, '');
  // an all-zero id is what firmware without one reports
  return id && !/^0+$/.test(id) ? id : null;
}

/** The version number an operating system description leads with (`Ubuntu 22.04.3 LTS` → `22.04.3`). */
export function osVersion(value: unknown): string | null {
  return text(value)?.match(/\d+(?:\.\d+)*/)?.[0] ?? null;
}

/** Kubernetes quantities of memory (`16374584Ki`, `16Gi`, `17179869184`) in bytes. */
export function memoryBytes(value: unknown): number | null {
  const quantity = text(typeof value === 'number' ? String(value) : value);
  const match = quantity?.match(/^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$/);
  if (!match) return null;
  const units: Record<string, number> = {
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    K: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Math.round(Number(match[1]) * (match[2] ? units[match[2]]! : 1));
}

const values = (...candidates: (string | null)[]): string[] =>
  [...new Set(candidates.filter((c): c is string => c !== null))].sort();

/** What identifies a machine, as an observation reports it (normalised); its keys are these values. */
interface MachineFacts {
  hostname: string | null;
  addresses: string[];
  machine_id: string | null;
  product_uuid: string | null;
}

/** Host facts (`type_data.host`, docs/collectors.md) normalised for identification; `hostname` when the CI names it better. */
function machineOf(host: Json, hostname: string | null = hostnameKey(host.hostname)): MachineFacts {
  return {
    hostname,
    addresses: values(...(Array.isArray(host.addresses) ? host.addresses : []).map(addressKey)),
    machine_id: machineKey(host.machine_id),
    product_uuid: machineKey(host.product_uuid),
  };
}

/** A host facet of the machine facts and whatever else the CI reports of it: the keys are the machine facts' values. */
function facet(ci: ObservedCi, role: Facet['role'], machine: MachineFacts, more: Json = {}): Facet {
  return { ciId: ci.ci_id, kind: 'host', role, keys: machineKeys(machine), fields: present({ ...machine, ...more }) };
}

/** A machine's identifying keys, each value behind `prefix` (a server's product and port) when given. */
function machineKeys(machine: MachineFacts, prefix = ''): Facet['keys'] {
  return withValues({
    machine_id: values(machine.machine_id).map((v) => prefix + v),
    product_uuid: values(machine.product_uuid).map((v) => prefix + v),
    hostname: values(machine.hostname).map((v) => prefix + v),
    address: machine.addresses.map((v) => prefix + v),
  });
}

const withValues = (keys: Facet['keys']): Facet['keys'] =>
  Object.fromEntries(Object.entries(keys).filter(([, v]) => v.length > 0));

/** The fields that have a value: absence and null read the same. */
const present = (fields: Json): Json =>
  Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0)),
  );

function kubernetesNode(ci: ObservedCi): Facet {
  const status = object(ci.raw_data.status);
  const info = object(status.nodeInfo);
  const listed = Array.isArray(status.addresses) ? status.addresses.map(object) : [];
  const named = listed.filter((a) => a.type === 'Hostname').map((a) => hostnameKey(a.address));
  const capacity = object(status.capacity);
  const machine = machineOf(
    {
      addresses: listed.filter((a) => a.type !== 'Hostname').map((a) => a.address),
      machine_id: info.machineID,
      product_uuid: info.systemUUID,
    },
    named.find((n) => n !== null) ?? hostnameKey(ci.name),
  );
  return facet(ci, 'self', machine, {
    'os.name': text(info.osImage)?.replace(/\s*\d.*$/, '') || null,
    'os.version': osVersion(info.osImage),
    kernel: text(info.kernelVersion),
    architecture: text(info.architecture),
    cpu_count: count(capacity.cpu),
    memory_bytes: memoryBytes(capacity.memory),
    kubelet_version: text(info.kubeletVersion),
  });
}

function linuxHost(ci: ObservedCi): Facet {
  const data = ci.type_data;
  const host = object(data.host);
  return facet(ci, 'self', machineOf(host, hostnameKey(data.hostname) ?? hostnameKey(host.hostname)), {
    'os.name': text(data.os_name),
    'os.version': osVersion(data.os_version),
    kernel: text(data.kernel),
    architecture: text(data.architecture),
    cpu_count: count(data.cpu_count),
    memory_bytes: count(data.memory_bytes),
  });
}

/** The host a server runs on, from the host facts under `type_data.host`. */
function runsOn(ci: ObservedCi): Facet | null {
  const host = object(ci.type_data.host);
  return Object.keys(host).length === 0 ? null : facet(ci, 'runs-on', machineOf(host));
}

/** The CI types that are hosts themselves. */
const SELF: Record<string, (ci: ObservedCi) => Facet> = { 'k8s.node': kubernetesNode, 'host.linux': linuxHost };

/** What a database server's CI says of the server, by CI type: its product, the port it answers on, and more. */
const DATABASE_SERVERS: Record<string, (ci: ObservedCi) => Json> = {
  'postgresql.server': (ci) => ({
    product: 'postgresql',
    port: count(object(ci.raw_data.settings).port),
    role: text(ci.type_data.replication_role),
    max_connections: count(ci.type_data.max_connections),
  }),
  'mariadb.server': (ci) => ({
    product: text(ci.type_data.flavour) ?? 'mariadb',
    port: count(object(ci.raw_data.variables).port),
    role: ci.type_data.read_only === true ? 'read-only' : null,
    max_connections: count(ci.type_data.max_connections),
    server_uuid: machineKey(ci.type_data.server_uuid),
  }),
  'redis.server': (ci) => ({ product: 'redis', port: count(ci.type_data.port), role: text(ci.type_data.role) }),
};

/** The port of `host:port` (or `[v6]:port`). */
const endpointPort = (endpoint: unknown): number | null => count(text(endpoint)?.match(/:(\d+)$/)?.[1]);

/**
 * A database server as its own CI describes it. Its machine keys are the machine's, each prefixed
 * with the product and port (`postgresql:5432@<machine id>`): one machine runs many servers, and
 * the host rules over these keys then recognise one server whoever read it, over whichever address.
 */
function databaseServer(ci: ObservedCi, said: Json): Facet | null {
  const host = object(ci.type_data.host);
  const machine = machineOf(host);
  const port = (said.port as number | null) ?? endpointPort(host.endpoint);
  if (port === null) return null;
  const keys = withValues({
    server_uuid: values((said.server_uuid as string | null | undefined) ?? null),
    ...machineKeys(machine, `${String(said.product)}:${port}@`),
  });
  const fields = present({
    name: ci.name,
    product: said.product,
    version: text(ci.type_data.version),
    port,
    role: said.role,
    hostname: machine.hostname,
    machine_id: machine.machine_id,
    max_connections: said.max_connections,
  });
  return { ciId: ci.ci_id, kind: 'database-server', role: 'self', keys, fields };
}

/** Whether a CI of this type may observe a host or a server (the worker reads no other CI). */
export const mayObserve = (ciType: string): boolean =>
  Object.hasOwn(SELF, ciType) || ciType.startsWith('host.') || /\.(server|node)$/.test(ciType);

/**
 * What a CI observes: nothing when archived (an archived observation links nothing); its host
 * when it is one or records the host it runs on; and the database server when it is one. A facet
 * without a single key identifies nothing and is left out.
 */
export function facetsOf(ci: ObservedCi): Facet[] {
  if (ci.status === 'archived') return [];
  // own keys only: a CI type is any text, `constructor` included
  const self = Object.hasOwn(SELF, ci.ci_type) ? SELF[ci.ci_type] : undefined;
  const server = Object.hasOwn(DATABASE_SERVERS, ci.ci_type) ? DATABASE_SERVERS[ci.ci_type] : undefined;
  const found = [self ? self(ci) : runsOn(ci), server ? databaseServer(ci, server(ci)) : null];
  return found.filter((f): f is Facet => f !== null && Object.keys(f.keys).length > 0);
}
