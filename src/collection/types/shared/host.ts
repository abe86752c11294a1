/**
 * The host a server runs on, as its collector learnt it: what the server says of its own machine
 * (a host name, the addresses it listens on, a machine identity when it reveals one), and the
 * endpoint the collector reached it at. Every collector type records these the same way, under
 * `type_data.host` of its server CI, so that one machine seen by several collectors can be
 * recognised by the same facts whoever saw it.
 *
 * They sit in `type_data` (not `raw_data`): they describe where the server runs rather than how it
 * is configured, and a server moving to another machine is still one change record, of
 * `type_data.host`.
 */
export interface HostFacts {
  /** The machine's host name as the server reports it (lower case, without a trailing dot); null when it says none. */
  hostname: string | null;
  /** The addresses the server listens on or answered from, sorted, without wildcard addresses. */
  addresses: string[];
  /** A machine identity the server reveals (a product or machine UUID); null for most servers. */
  machine_id: string | null;
  /** `host:port` the collector connected to (the source's endpoint). */
  endpoint: string;
}

const WILDCARDS = new Set(['', '*', '0.0.0.0', '::', '[::]', '::0']);

/** Host facts with the names normalised and the addresses deduplicated, sorted and stripped of wildcards. */
export function hostFacts(facts: {
  hostname?: string | null;
  addresses?: readonly (string | null | undefined)[];
  machine_id?: string | null;
  endpoint: string;
}): HostFacts {
  const hostname = facts.hostname?.trim().toLowerCase().replace(/\.$/, '') || null;
  const addresses = [
    ...new Set(
      (facts.addresses ?? [])
        .map((a) =>
          a
            ?.trim()
            .replace(/^\[|\]$/g, '')
            .toLowerCase(),
        )
        .filter((a): a is string => !!a && !WILDCARDS.has(a)),
    ),
  ].sort();
  return { hostname, addresses, machine_id: facts.machine_id?.trim().toLowerCase() || null, endpoint: facts.endpoint };
}

/** The `type_data` keys host facts add, as a collector type's `ciTypes` documents them. */
export const HOST_TYPE_DATA_KEYS = ['host.hostname', 'host.addresses', 'host.machine_id', 'host.endpoint'] as const;
