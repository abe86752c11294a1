import { BlockList, isIP } from 'node:net';

/**
 * How host facts read names and addresses, shared by the facts a server reports and those of the
 * collector's own machine, so that both compare equal when they name the same machine.
 */

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
// BlockList also matches IPv4-mapped forms (::ffff:127.0.0.1) and every spelling of ::1
loopback.addAddress('::1', 'ipv6');

/** A host or address without brackets, an IPv6 zone or a trailing dot, in lower case. */
function bare(hostOrAddress: string): string {
  return hostOrAddress
    .trim()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .replace(/\.+$/, '')
    .toLowerCase();
}

/**
 * Whether a host name or address is the loopback interface: 127.0.0.0/8, ::1 or `localhost`
 * (with the `.localhost` names RFC 6761 reserves for it). A server reached there runs on the
 * collector's own machine.
 */
export function isLoopback(hostOrAddress: string | null | undefined): boolean {
  if (!hostOrAddress) return false;
  const host = bare(hostOrAddress);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  return family !== 0 && loopback.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * A host name as host facts keep it: lower case, without a trailing dot; null when there is none.
 * A loopback name is none either: `localhost` is every machine's name for itself, so it tells
 * no machine apart (RabbitMQ's default node name is `rabbit@localhost`).
 */
export function hostnameOf(name: string | null | undefined): string | null {
  const host = name?.trim().toLowerCase().replace(/\.+$/, '') || null;
  return host && !isLoopback(host) ? host : null;
}

/** A machine or product identifier as host facts keep it: trimmed, lower case; null when empty. */
export function identifierOf(id: string | null | undefined): string | null {
  return id?.trim().toLowerCase() || null;
}
