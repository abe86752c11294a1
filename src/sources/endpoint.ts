import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The server-side request forgery guard for every address a collector connects to. Link-local
 * and cloud metadata addresses are never reachable through a source (they hand out the host's
 * cloud credentials); `CINV_SOURCE_ALLOWED_HOSTS` narrows endpoints further to the hosts and
 * networks an operator lists. Endpoints are checked when a source is created or updated, and again
 * at connection time after DNS resolution (a name may resolve elsewhere later, or redirect).
 */

const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal']);

const forbidden = new BlockList();
forbidden.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, AWS/GCP/Azure/OpenStack metadata
forbidden.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
forbidden.addSubnet('fe80::', 10, 'ipv6'); // link-local
forbidden.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6

export class EndpointRefused extends Error {}

/** `host` or `host/prefix` entries; hosts match exactly or, written `*.example.com`, by suffix. */
export class AllowedHosts {
  private readonly names: string[] = [];
  private readonly networks = new BlockList();
  private readonly hasNetworks: boolean;

  constructor(readonly entries: readonly string[]) {
    let networks = false;
    for (const entry of entries) {
      const [address, prefix] = entry.split('/');
      const family = isIP(address ?? '');
      if (family !== 0) {
        const bits = prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix);
        this.networks.addSubnet(address!, bits, family === 4 ? 'ipv4' : 'ipv6');
        networks = true;
      } else {
        this.names.push(entry.toLowerCase());
      }
    }
    this.hasNetworks = networks;
  }

  get restricts(): boolean {
    return this.entries.length > 0;
  }

  allowsName(host: string): boolean {
    const name = host.toLowerCase();
    return this.names.some((allowed) => (allowed.startsWith('*.') ? name.endsWith(allowed.slice(1)) : name === allowed));
  }

  allowsAddress(address: string): boolean {
    return this.hasNetworks && this.networks.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
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

/** Why an address may not be connected to, or undefined when it may. */
export function refusedAddress(address: string): string | undefined {
  const plain = bare(address);
  const family = isIP(plain);
  if (family === 0) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain);
  if (mapped) return refusedAddress(mapped[1]!);
  if (forbidden.check(plain, family === 6 ? 'ipv6' : 'ipv4')) return `${plain} is a link-local or cloud metadata address`;
  return undefined;
}

/**
 * Checks an endpoint as written (the host name or address in it); returns the reason it is
 * refused, or undefined. Names are resolved too, when they resolve: a name that points at a
 * metadata address is refused now rather than at the first collection.
 */
export async function refusedEndpoint(url: URL, allowed: AllowedHosts): Promise<string | undefined> {
  const host = bare(url.hostname).toLowerCase();
  if (METADATA_NAMES.has(host) || host.endsWith('.metadata.google.internal')) return `${host} is a cloud metadata host`;
  const literal = refusedAddress(host);
  if (literal) return literal;
  const family = isIP(host);
  if (allowed.restricts) {
    const ok = family === 0 ? allowed.allowsName(host) || (await resolvesInto(host, allowed)) : allowed.allowsAddress(host);
    if (!ok) return `${host} is not in CINV_SOURCE_ALLOWED_HOSTS`;
  }
  if (family === 0) {
    for (const address of await resolve(host)) {
      const reason = refusedAddress(address);
      if (reason) return `${host} resolves to ${reason}`;
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
 * A `lookup` for http(s) agents and sockets that refuses forbidden addresses after resolution,
 * so that every connection a collector makes (redirects included: each one connects anew) is
 * checked against the address it really reaches.
 */
export function guardedLookup(allowed: AllowedHosts): LookupFunction {
  return (hostname, options, callback) => {
    void lookup(hostname, { ...options, all: true, verbatim: true })
      .then((answers) => {
        for (const { address } of answers) assertReachable(hostname, address, allowed);
        if (options.all) (callback as (e: null, a: typeof answers) => void)(null, answers);
        else callback(null, answers[0]!.address, answers[0]!.family);
      })
      .catch((error: NodeJS.ErrnoException) => callback(error, '', 0));
  };
}

function assertReachable(hostname: string, address: string, allowed: AllowedHosts): void {
  const reason = refusedAddress(address);
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
  const host = bare(hostname);
  if (isIP(host) !== 0) {
    assertReachable(host, host, allowed);
    return host;
  }
  const answers = await lookup(host, { all: true, verbatim: true });
  if (answers.length === 0) throw new EndpointRefused(`${host} does not resolve`);
  for (const { address } of answers) assertReachable(host, address, allowed);
  return answers[0]!.address;
}
