import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * The server-side request forgery guard for every address a collector connects to. Link-local
 * and cloud metadata addresses are never reachable through a source (they hand out the host's
 * cloud credentials). Loopback, private and other non-public addresses are reachable while
 * `CINV_SOURCE_ALLOW_PRIVATE` is true (the default: a self-hosted install collects its own
 * databases and Prometheus, often on the same machine); a shared install sets it to false.
 * `CINV_SOURCE_ALLOWED_HOSTS` narrows endpoints further to the hosts and networks an operator
 * lists. Endpoints are checked when a source is created or updated, and again at connection time
 * after DNS resolution (a name may resolve elsewhere later, or redirect).
 */

const METADATA_NAMES = new Set([
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** Never reachable, whatever the settings. */
const neverReachable = new BlockList();
neverReachable.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, AWS/GCP/Azure/OpenStack metadata
neverReachable.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
neverReachable.addSubnet('fe80::', 10, 'ipv6'); // link-local
neverReachable.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6

/** Reachable only with CINV_SOURCE_ALLOW_PRIVATE: everything that is not a public unicast address. */
const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network": connecting to 0.0.0.0 reaches the loopback interface
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv4');
}
nonPublic.addAddress('::', 'ipv6');
nonPublic.addAddress('::1', 'ipv6');
nonPublic.addSubnet('fc00::', 7, 'ipv6'); // unique local
nonPublic.addSubnet('fec0::', 10, 'ipv6'); // site-local (deprecated, still routed by some)
nonPublic.addSubnet('ff00::', 8, 'ipv6'); // multicast

export class EndpointRefused extends Error {}

/**
 * A host name as the resolver will see it: lower case, without trailing dots, in its ASCII
 * (punycode) form, percent-escapes decoded, and an IPv4 address written as one number, in octal or
 * in hex (`2852039166`, `0251.0376.0251.0376`, `0xa9fea9fe`) as dotted decimal. `http(s)` URLs
 * get most of this from the URL parser; other schemes (`postgres://`) get none of it. An IPv6
 * address loses its brackets and zone. Empty when the name is not a valid host.
 */
export function normalHost(hostname: string): string {
  const host = bare(hostname);
  const address = withoutZone(host);
  if (isIP(address) === 6) return address.toLowerCase();
  // decoded first: `metadata%2e` is `metadata.`, whose trailing dot goes with the others
  return domainToASCII(host).replace(/\.+$/, '');
}

/** `host` or `host/prefix` entries; hosts match exactly or, written `*.example.com`, by suffix. */
export class AllowedHosts {
  private readonly names: string[] = [];
  private readonly networks = new BlockList();
  private readonly hasNetworks: boolean;
  /** CINV_SOURCE_ALLOW_PRIVATE: loopback, private and other non-public addresses may be connected to. */
  readonly allowPrivate: boolean;
  /**
   * Whether a non-public address that a listed network holds may be connected to even when
   * `allowPrivate` is off: a receiver the operator named is theirs, whoever points at it.
   */
  readonly listedPrivate: boolean;

  constructor(
    readonly entries: readonly string[],
    options: { allowPrivate?: boolean; listedPrivate?: boolean } = {},
  ) {
    let networks = false;
    for (const entry of entries) {
      const [address, prefix] = entry.split('/');
      const family = isIP(address ?? '');
      if (family !== 0) {
        const bits = prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix);
        this.networks.addSubnet(address!, bits, family === 4 ? 'ipv4' : 'ipv6');
        networks = true;
      } else {
        const wildcard = entry.startsWith('*.');
        const name = normalHost(wildcard ? entry.slice(2) : entry) || entry.toLowerCase();
        this.names.push(wildcard ? `*.${name}` : name);
      }
    }
    this.hasNetworks = networks;
    this.allowPrivate = options.allowPrivate ?? true;
    this.listedPrivate = options.listedPrivate ?? false;
  }

  get restricts(): boolean {
    return this.entries.length > 0;
  }

  allowsName(host: string): boolean {
    const name = normalHost(host) || host.toLowerCase();
    return this.names.some((allowed) =>
      allowed.startsWith('*.') ? name.endsWith(allowed.slice(1)) : name === allowed,
    );
  }

  allowsAddress(address: string): boolean {
    const plain = withoutZone(bare(address));
    return this.hasNetworks && this.networks.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  }
}

/** Parses a CINV_SOURCE_ALLOWED_HOSTS value: comma-separated hosts, `*.suffix` names and CIDRs. */
export function parseAllowedHosts(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
const withoutZone = (address: string) => address.replace(/%.*$/, '');

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail included). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const [head = '', tail] = text.split('::');
  if (tail === undefined) return parse(head);
  const start = parse(head);
  const end = parse(tail);
  return [...start, ...new Array<number>(8 - start.length - end.length).fill(0), ...end];
}

/**
 * The IPv4 address an IPv6 address stands for, where it embeds one that traffic reaches:
 * IPv4-mapped (`::ffff:a.b.c.d`, which Node connects to over IPv4), IPv4-compatible (`::a.b.c.d`),
 * IPv4-translated (SIIT, `::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`) and 6to4
 * (`2002::/16`).
 */
function embeddedIPv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  const dotted = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) return dotted(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && (zeros(2, 6) || g[2] === 1)) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x2002) return dotted(g[1]!, g[2]!);
  return undefined;
}

/** Why an address may not be connected to under `policy`, or undefined when it may. */
export function refusedAddress(address: string, policy: AllowedHosts): string | undefined {
  const plain = withoutZone(bare(address)).toLowerCase();
  const family = isIP(plain);
  if (family === 0) return undefined;
  const v4 = family === 4 ? plain : embeddedIPv4(plain);
  const listed = (list: BlockList) =>
    list.check(plain, family === 6 ? 'ipv6' : 'ipv4') || (v4 !== undefined && list.check(v4, 'ipv4'));
  if (listed(neverReachable)) return `${plain} is a link-local or cloud metadata address`;
  if (!policy.allowPrivate && listed(nonPublic) && !(policy.listedPrivate && policy.allowsAddress(plain))) {
    return `${plain} is a loopback, private or otherwise non-public address (CINV_SOURCE_ALLOW_PRIVATE is false)`;
  }
  return undefined;
}

/**
 * Whether an address is a public unicast one: neither loopback, private, link-local nor otherwise
 * non-public (what CINV_SOURCE_ALLOW_PRIVATE governs), embedded IPv4 addresses included.
 */
export function isPublicAddress(address: string): boolean {
  const plain = withoutZone(bare(address)).toLowerCase();
  const family = isIP(plain);
  if (family === 0) return false;
  const v4 = family === 4 ? plain : embeddedIPv4(plain);
  const listed = (list: BlockList) =>
    list.check(plain, family === 6 ? 'ipv6' : 'ipv4') || (v4 !== undefined && list.check(v4, 'ipv4'));
  return !listed(neverReachable) && !listed(nonPublic);
}

/** Why a (normalised) host name may not be connected to, before it is resolved. */
function refusedName(host: string, policy: AllowedHosts): string | undefined {
  if (METADATA_NAMES.has(host) || host.endsWith('.metadata.google.internal')) return `${host} is a cloud metadata host`;
  if (!policy.allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) {
    return `${host} is a loopback name (CINV_SOURCE_ALLOW_PRIVATE is false)`;
  }
  return undefined;
}

/**
 * Checks an endpoint as written (the host name or address in it); returns the reason it is
 * refused, or undefined. Names are resolved too, when they resolve: a name that points at a
 * refused address is refused now rather than at the first collection.
 */
export async function refusedEndpoint(url: URL, allowed: AllowedHosts): Promise<string | undefined> {
  const host = normalHost(url.hostname);
  if (!host) return `${url.hostname} is not a valid host name`;
  const reason = refusedName(host, allowed) ?? refusedAddress(host, allowed);
  if (reason) return reason;
  const family = isIP(host);
  if (allowed.restricts) {
    const ok =
      family === 0 ? allowed.allowsName(host) || (await resolvesInto(host, allowed)) : allowed.allowsAddress(host);
    if (!ok) return `${host} is not in CINV_SOURCE_ALLOWED_HOSTS`;
  }
  if (family === 0) {
    for (const address of await resolve(host)) {
      const refused = refusedAddress(address, allowed);
      if (refused) return `${host} resolves to ${refused}`;
    }
  }
  return undefined;
}

async function resolve(host: string): Promise<string[]> {
  try {
    const answer = await Promise.race([
      lookup(host, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
    ]);
    return answer.map((a) => a.address);
  } catch {
    // an unresolvable name is not refused here: it is checked again when a collector connects
    return [];
  }
}

async function resolvesInto(host: string, allowed: AllowedHosts): Promise<boolean> {
  const addresses = await resolve(host);
  return addresses.length > 0 && addresses.every((a) => allowed.allowsAddress(a));
}

/**
 * A `lookup` for http(s) agents and sockets that refuses forbidden names and addresses after
 * resolution, so that every connection a collector makes (redirects included: each one connects
 * anew) is checked against the address it really reaches.
 */
export function guardedLookup(allowed: AllowedHosts): LookupFunction {
  return (hostname, options, callback) => {
    void Promise.resolve()
      .then(() => {
        const named = refusedName(normalHost(hostname), allowed);
        if (named) throw new EndpointRefused(`connection to ${hostname} refused: ${named}`);
        return lookup(hostname, { ...options, all: true, verbatim: true });
      })
      .then((answers) => {
        for (const { address } of answers) assertReachable(hostname, address, allowed);
        if (options.all) (callback as (e: null, a: typeof answers) => void)(null, answers);
        else callback(null, answers[0]!.address, answers[0]!.family);
      })
      .catch((error: NodeJS.ErrnoException) => callback(error, '', 0));
  };
}

function assertReachable(hostname: string, address: string, allowed: AllowedHosts): void {
  const reason = refusedAddress(address, allowed);
  if (reason) throw new EndpointRefused(`connection to ${hostname} refused: ${reason}`);
  if (allowed.restricts && !allowed.allowsName(hostname) && !allowed.allowsAddress(address)) {
    throw new EndpointRefused(`connection to ${hostname} refused: not in CINV_SOURCE_ALLOWED_HOSTS`);
  }
}

/**
 * The address to connect to for a client that does its own connecting (a database driver): the
 * host resolved now and checked like every http connection. Connecting to this address, not the
 * name, leaves no second lookup that could answer differently.
 */
export async function guardedAddress(hostname: string, allowed: AllowedHosts): Promise<string> {
  const host = normalHost(hostname);
  if (!host) throw new EndpointRefused(`${hostname} is not a valid host name`);
  if (isIP(host) !== 0) {
    assertReachable(host, host, allowed);
    return host;
  }
  const named = refusedName(host, allowed);
  if (named) throw new EndpointRefused(`connection to ${host} refused: ${named}`);
  const answers = await lookup(host, { all: true, verbatim: true });
  if (answers.length === 0) throw new EndpointRefused(`${host} does not resolve`);
  for (const { address } of answers) assertReachable(host, address, allowed);
  return answers[0]!.address;
}

/** The endpoint policy of this server (CINV_SOURCE_ALLOWED_HOSTS, CINV_SOURCE_ALLOW_PRIVATE), for collectors and subscriptions alike. */
export const allowedHostsOf = (config: { sourceAllowedHosts: readonly string[]; sourceAllowPrivate: boolean }) =>
  new AllowedHosts(config.sourceAllowedHosts, { allowPrivate: config.sourceAllowPrivate });
