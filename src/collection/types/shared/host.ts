import { hostnameOf, identifierOf } from './host-names.js';
import { localMachine } from './local-machine.js';

export { isLoopback } from './host-names.js';

/**
 * The host a server runs on, as its collector learnt it: what the server says of its own machine
 * (a host name, the addresses it listens on, a machine identity when it reveals one), and the
 * endpoint the collector reached it at. Every collector type records these the same way, under
 * `type_data.host` of its server CI, so that one machine seen by several collectors can be
 * recognised by the same facts whoever saw it.
 *
 * They sit in `type_data` (not `raw_data`): they describe where the server runs rather than how it
 * is configured, and a server moving to another machine is still one change record, of
 * `type_data.host`. Nothing that moves on its own belongs here: it would be a change record on
 * every collection.
 */
export interface HostFacts {
  /** The machine's host name (lower case, without a trailing dot, never `localhost`); null when unknown. */
  hostname: string | null;
  /** The addresses the server listens on or answered from, sorted, without wildcard addresses. */
  addresses: string[];
  /** The machine's operating-system identity (`/etc/machine-id`); null when unknown. */
  machine_id: string | null;
  /** The machine's firmware identity (SMBIOS product UUID); null when unknown. */
  product_uuid: string | null;
  /** `host:port` the collector connected to (the source's endpoint). */
  endpoint: string;
}

const WILDCARDS = new Set(['', '*', '0.0.0.0', '::', '[::]', '::0']);

/**
 * Host facts with the names normalised and the addresses deduplicated, sorted and stripped of
 * wildcards. `local` says the server runs on the collector's own machine (it was reached over
 * loopback): what the server does not say of its machine is then filled in from this machine.
 */
export function hostFacts(facts: {
  hostname?: string | null;
  addresses?: readonly (string | null | undefined)[];
  machine_id?: string | null;
  product_uuid?: string | null;
  endpoint: string;
  local?: boolean;
}): HostFacts {
  const here = facts.local ? localMachine() : undefined;
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
  return {
    hostname: hostnameOf(facts.hostname) ?? here?.hostname ?? null,
    addresses,
    machine_id: identifierOf(facts.machine_id) ?? here?.machine_id ?? null,
    product_uuid: identifierOf(facts.product_uuid) ?? here?.product_uuid ?? null,
    endpoint: facts.endpoint,
  };
}

/** The `type_data` keys host facts add, as a collector type's `ciTypes` documents them. */
export const HOST_TYPE_DATA_KEYS = [
  'host.hostname',
  'host.addresses',
  'host.machine_id',
  'host.product_uuid',
  'host.endpoint',
] as const;
