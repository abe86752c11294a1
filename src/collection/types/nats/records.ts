import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { hostFacts, isLoopback } from '../shared/host.js';
import type { Target } from './monitor.js';

/**
 * The server and account records, from `/varz`, `/accountz` and the account list of `/jsz`. Only
 * configuration goes into `raw_data`; what moves on its own (counters, usage, the per-process
 * server id, the start time) goes under `type_data.metrics`.
 */

type Json = Record<string, unknown>;

/** Keys whose values are secrets wherever they appear (the server redacts most; this is the second line). */
const SECRET_KEY = /pass(word)?|secret|token|nkey|seed|jwt|credential|private|signing_key|auth_?key/i;

/** A copy with secret-named keys dropped and credentials stripped out of URLs (`nats://user:pass@host`). */
export function scrubbed(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(/(\w+:\/\/)[^/@\s]*@/g, '$1');
  if (Array.isArray(value)) return value.map(scrubbed);
  if (typeof value !== 'object' || value === null) return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) if (!SECRET_KEY.test(key)) out[key] = scrubbed(inner);
  return out;
}

const pick = (from: Json, keys: readonly string[]): Json =>
  Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]]));

/** The /varz settings that describe how the server is configured (an allow-list: new counters stay out). */
const SERVER_SETTINGS = [
  'version',
  'proto',
  'git_commit',
  'go',
  'host',
  'port',
  'max_connections',
  'max_subscriptions',
  'ping_interval',
  'ping_max',
  'http_host',
  'http_port',
  'http_base_path',
  'https_port',
  'auth_required',
  'auth_timeout',
  'tls_required',
  'tls_verify',
  'tls_timeout',
  'max_control_line',
  'max_payload',
  'max_pending',
  'write_deadline',
  'lame_duck_duration',
  'lame_duck_grace_period',
  'system_account',
  'tags',
  'connect_urls',
  'ws_connect_urls',
] as const;
/** Nested settings blocks kept whole (scrubbed): they hold listen addresses, names and configured peers. */
const SERVER_BLOCKS = ['cluster', 'gateway', 'leaf', 'mqtt', 'websocket'] as const;

/** 2^64-1 (and -1) is how nats-server writes "no limit". */
export const limitOf = (value: unknown): number | null =>
  typeof value === 'number' && value >= 0 && value < 2 ** 63 ? value : null;

const num = (value: unknown): number | null => (typeof value === 'number' ? value : null);
const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/** Host names out of `host:port` URLs the server advertises. */
function hostsOf(urls: unknown): string[] {
  if (!Array.isArray(urls)) return [];
  return urls.filter((u): u is string => typeof u === 'string').map((u) => u.replace(/:\d+$/, ''));
}

/** The server's configured name, or null when it is the default (its per-process id). */
export function configuredName(varz: Json): string | null {
  const name = text(varz.server_name);
  return name === null || name === varz.server_id ? null : name;
}

export function serverRecord(varz: Json, target: Target): UniversalRecord {
  const jetstream = (varz.jetstream ?? {}) as { config?: Json; stats?: Json; meta?: Json };
  const config = jetstream.config;
  const cluster = (varz.cluster ?? {}) as Json;
  const name = configuredName(varz);
  const raw: Json = { ...pick(varz, SERVER_SETTINGS), server_name: name };
  for (const block of SERVER_BLOCKS) if (varz[block] !== undefined) raw[block] = varz[block];
  raw.jetstream = config
    ? { config, ...(jetstream.meta && { meta: pick(jetstream.meta, ['name', 'cluster_size']) }) }
    : null;
  const started = Date.parse(String(varz.start));
  const now = Date.parse(String(varz.now));
  return {
    external_id: 'server',
    ci_type: 'nats.server',
    name: target.serverName,
    raw_data: scrubbed(raw) as Json,
    type_data: {
      version: text(varz.version),
      server_name: name,
      cluster_name: text(cluster.name),
      jetstream_enabled: config !== undefined,
      jetstream_max_memory: config ? limitOf(config.max_memory) : null,
      jetstream_max_storage: config ? limitOf(config.max_storage) : null,
      jetstream_domain: config ? text(config.domain) : null,
      max_payload: num(varz.max_payload),
      max_connections: num(varz.max_connections),
      auth_required: varz.auth_required === true,
      tls_required: varz.tls_required === true,
      host: hostFacts({
        hostname: name,
        addresses: [text(varz.host), text(varz.http_host), text(cluster.addr), ...hostsOf(varz.connect_urls)],
        endpoint: target.address,
        local: isLoopback(new URL(target.base).hostname),
      }),
      metrics: {
        // a new id on every start: kept here so that a restart is not a configuration change
        server_id: text(varz.server_id),
        started_at: Number.isNaN(started) ? null : new Date(started).toISOString(),
        uptime_seconds: Number.isNaN(started) || Number.isNaN(now) ? null : Math.round((now - started) / 1000),
        connections: num(varz.connections),
        total_connections: num(varz.total_connections),
        subscriptions: num(varz.subscriptions),
        slow_consumers: num(varz.slow_consumers),
        in_msgs: num(varz.in_msgs),
        out_msgs: num(varz.out_msgs),
        in_bytes: num(varz.in_bytes),
        out_bytes: num(varz.out_bytes),
        mem_bytes: num(varz.mem),
        cpu_percent: num(varz.cpu),
        routes: num(varz.routes),
        leafnodes: num(varz.leafnodes),
        jetstream_memory_bytes: num(jetstream.stats?.memory),
        jetstream_storage_bytes: num(jetstream.stats?.storage),
      },
    },
  };
}

/** An account's JetStream figures as /jsz?accounts=true lists them. */
export interface JetStreamAccount {
  name: string;
  memory?: number;
  storage?: number;
  reserved_memory?: number;
  reserved_storage?: number;
}

interface Import {
  subject?: string;
  account?: string;
  to?: string;
  type?: string;
}

/** One account from `/accountz?acc=<name>`, with its JetStream limits from /jsz when it has JetStream. */
export function accountRecord(
  name: string,
  detail: Json,
  systemAccount: string | null,
  jetstream: JetStreamAccount | undefined,
): UniversalRecord {
  const imports = Array.isArray(detail.imports) ? (detail.imports as Import[]) : [];
  const exports = Array.isArray(detail.exports) ? (detail.exports as Import[]) : [];
  const flow = (list: Import[]) =>
    list
      .map((i) => pick(i as Json, ['subject', 'account', 'to', 'type']))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  const maxMemory = jetstream ? limitOf(jetstream.reserved_memory) : null;
  const maxStorage = jetstream ? limitOf(jetstream.reserved_storage) : null;
  return {
    external_id: `account/${name}`,
    ci_type: 'nats.account',
    name,
    raw_data: scrubbed({
      jetstream_enabled: detail.jetstream_enabled === true,
      system_account: name === systemAccount,
      jetstream_max_memory: maxMemory,
      jetstream_max_storage: maxStorage,
      imports: flow(imports),
      exports: flow(exports),
    }) as Json,
    type_data: {
      jetstream_enabled: detail.jetstream_enabled === true,
      system_account: name === systemAccount,
      jetstream_max_memory: maxMemory,
      jetstream_max_storage: maxStorage,
      imports: imports.length,
      exports: exports.length,
      metrics: {
        client_connections: num(detail.client_connections),
        leafnode_connections: num(detail.leafnode_connections),
        subscriptions: num(detail.subscriptions),
        jetstream_memory_bytes: num(jetstream?.memory),
        jetstream_storage_bytes: num(jetstream?.storage),
      },
    },
    relationships: [{ type: 'hosted_on', target_external_id: 'server' }],
  };
}
