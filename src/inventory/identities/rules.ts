/**
 * Identification and precedence rules: how observations (CIs) of several sources are recognised
 * as one real thing, and which source's value an identity shows for each field. The shipped rules
 * are below; a tenant's administrators may replace a kind's rules (PUT /api/v1/identities/rules),
 * and the partition and the reconciled record follow the rules in force.
 */

/**
 * A key an observation may carry, its values normalised (facets.ts). A database server's machine
 * keys carry its product and port before the machine's value (`postgresql:5432@<machine id>`), so
 * that they name one server on the machine; `server_uuid` is the id a server gives its own data
 * directory (MySQL's).
 */
export const IDENTITY_KEYS = ['machine_id', 'product_uuid', 'hostname', 'address', 'server_uuid'] as const;
export type IdentityKey = (typeof IDENTITY_KEYS)[number];

export interface IdentificationRule {
  /** Named in conflicts and explanations. */
  name: string;
  /**
   * The keys whose values, taken together, identify: two observations match when they share a
   * value of every key (for `hostname` + `address`: the same host name and one address in common).
   */
  keys: IdentityKey[];
  /**
   * A real thing has one value of this rule (a machine id): two observations with different values
   * are different things, so no weaker rule may join them.
   */
  exclusive: boolean;
}

/**
 * Which observation's value an identity shows for a field: the first selector an observation with
 * a value matches wins (`host.linux`: a CI type, `source:12`: one source); observations matching
 * none come after, the most recently seen first.
 */
export type Precedence = Record<string, string[]>;

export interface KindRules {
  /** Strongest first. */
  identification: IdentificationRule[];
  precedence: Precedence;
  /** The order for fields `precedence` does not name. */
  defaultPrecedence: string[];
  /**
   * How long past its source's schedule an observation may go unseen before its values stop
   * winning: a source that stopped reporting hands over to the next in precedence.
   */
  staleMarginMinutes: number;
}

export type IdentityRules = Record<string, KindRules>;

export const KINDS = ['host', 'database-server'] as const;
export type IdentityKind = (typeof KINDS)[number];

/** The fields a host identity reconciles, in the order its record lists them. */
export const HOST_FIELDS = [
  'hostname',
  'addresses',
  'machine_id',
  'product_uuid',
  'os.name',
  'os.version',
  'kernel',
  'architecture',
  'cpu_count',
  'memory_bytes',
  'kubelet_version',
] as const;

/** The fields a database server's identity reconciles, in the order its record lists them. */
export const DATABASE_SERVER_FIELDS = [
  'name',
  'product',
  'version',
  'port',
  'role',
  'hostname',
  'machine_id',
  'max_connections',
] as const;

/** The keys each kind's observations carry: what its identification rules may name. */
export const KIND_KEYS: Record<IdentityKind, readonly IdentityKey[]> = {
  host: ['machine_id', 'product_uuid', 'hostname', 'address'],
  'database-server': IDENTITY_KEYS,
};

/** The fields each kind reconciles: what a pin may name, and the order of the record. */
export const KIND_FIELDS: Record<IdentityKind, readonly string[]> = {
  host: HOST_FIELDS,
  'database-server': DATABASE_SERVER_FIELDS,
};

/**
 * The shipped rules. A machine id (/etc/machine-id) or product UUID (DMI) is the strongest evidence
 * and one machine has one of each; a host name together with an address it listens on comes next;
 * a host name alone, then an address alone (what a server that names no machine, such as Redis,
 * says of where it runs), join observations only when no stronger evidence keeps them apart. The
 * operating system is best known by node_exporter on the host itself, then by the kubelet; what a
 * server says of the machine it runs on comes last.
 */
export const SHIPPED_RULES: IdentityRules = {
  host: {
    identification: [
      { name: 'machine-id', keys: ['machine_id'], exclusive: true },
      { name: 'product-uuid', keys: ['product_uuid'], exclusive: true },
      { name: 'hostname-and-address', keys: ['hostname', 'address'], exclusive: false },
      { name: 'hostname', keys: ['hostname'], exclusive: false },
      { name: 'address', keys: ['address'], exclusive: false },
    ],
    precedence: {
      'os.name': ['host.linux', 'k8s.node'],
      'os.version': ['host.linux', 'k8s.node'],
      kernel: ['host.linux', 'k8s.node'],
      kubelet_version: ['k8s.node'],
    },
    defaultPrecedence: ['host.linux', 'k8s.node'],
    staleMarginMinutes: 30,
  },
  // One server answers on one port of one machine: the host rules, over keys that carry the
  // product and port, after the id a server gives its data directory where it has one. Sources
  // reading the same server report the same values, so the most recently seen one wins.
  'database-server': {
    identification: [
      { name: 'server-uuid', keys: ['server_uuid'], exclusive: true },
      { name: 'port-on-machine-id', keys: ['machine_id'], exclusive: true },
      { name: 'port-on-product-uuid', keys: ['product_uuid'], exclusive: true },
      { name: 'port-on-hostname-and-address', keys: ['hostname', 'address'], exclusive: false },
      { name: 'port-on-hostname', keys: ['hostname'], exclusive: false },
      { name: 'port-on-address', keys: ['address'], exclusive: false },
    ],
    precedence: {},
    defaultPrecedence: [],
    staleMarginMinutes: 30,
  },
};

/** The rules in force for a tenant: its own where it set them, the shipped ones otherwise. */
export function rulesInForce(own: Partial<IdentityRules> | null | undefined): IdentityRules {
  return { ...SHIPPED_RULES, ...(own ?? {}) } as IdentityRules;
}
