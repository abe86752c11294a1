import type { Connection } from './connection.js';

/** INFO's answer: its fields by section (`server`, `replication`, `keyspace`, …), values as the server wrote them. */
export type Info = Record<string, Record<string, string>>;

export async function readInfo(connection: Connection): Promise<Info> {
  const text = String(await connection.call('INFO'));
  const info: Info = {};
  let section: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('# ')) {
      section = {};
      info[line.slice(2).trim().toLowerCase()] = section;
    } else if (line.includes(':')) {
      const at = line.indexOf(':');
      section[line.slice(0, at)] = line.slice(at + 1);
    }
  }
  return info;
}

/** `a=1,b=2` (keyspace, replica and module lines) as an object. */
export function fieldsOf(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? '').split(',')) {
    const at = part.indexOf('=');
    if (at > 0) out[part.slice(0, at)] = part.slice(at + 1);
  }
  return out;
}

export const numberOr = (value: string | undefined, fallback: number | null = null): number | null => {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  return Number.isFinite(n) ? n : fallback;
};

/**
 * The configuration the server record shows, asked for by name: `CONFIG GET *` would hand over
 * `requirepass` and `masterauth`. Each name is its own CONFIG GET (Redis before 7 takes one
 * pattern per call), all in one round trip.
 */
export const SETTINGS = [
  'maxmemory',
  'maxmemory-policy',
  'maxmemory-samples',
  'maxclients',
  'save',
  'appendonly',
  'appendfsync',
  'appendfilename',
  'aof-use-rdb-preamble',
  'auto-aof-rewrite-percentage',
  'auto-aof-rewrite-min-size',
  'rdbcompression',
  'dbfilename',
  'dir',
  'databases',
  'port',
  'tls-port',
  'bind',
  'protected-mode',
  'timeout',
  'tcp-keepalive',
  'tcp-backlog',
  'cluster-enabled',
  'replica-read-only',
  'replica-serve-stale-data',
  'replica-priority',
  'repl-diskless-sync',
  'repl-backlog-size',
  'min-replicas-to-write',
  'min-replicas-max-lag',
  'lazyfree-lazy-eviction',
  'lazyfree-lazy-expire',
  'notify-keyspace-events',
  'hz',
  'io-threads',
  'busy-reply-threshold',
  'slowlog-log-slower-than',
  'slowlog-max-len',
  'latency-monitor-threshold',
  'activedefrag',
  'loglevel',
  'logfile',
  'supervised',
  'enable-debug-command',
  'enable-module-command',
] as const;

/** Names never kept, whatever the list above becomes: passwords and the users they authenticate. */
const SECRET_NAME = /pass|auth|secret|token|masteruser|aclfile|^user$/i;

export function isSecretSetting(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** The settings above the server knows (older versions lack some), secrets dropped by name even if asked. */
export async function readSettings(connection: Connection): Promise<Record<string, string>> {
  const answers = await connection.batch(SETTINGS.map((name) => ['CONFIG', 'GET', name]));
  const settings: Record<string, string> = {};
  for (const [i, answer] of answers.entries()) {
    if (answer.error !== undefined) {
      // a refusal of CONFIG itself is the part's failure; an unknown name is just absent
      if (/NOPERM|unknown command|NOAUTH/i.test(answer.error))
        throw new Error(`CONFIG GET ${SETTINGS[i]}: ${answer.error}`);
      continue;
    }
    const pairs = answer.value as string[];
    for (let p = 0; p + 1 < pairs.length; p += 2)
      if (!isSecretSetting(pairs[p]!)) settings[pairs[p]!] = String(pairs[p + 1]);
  }
  return Object.fromEntries(Object.entries(settings).sort(([a], [b]) => a.localeCompare(b)));
}

/** Flat `[name, value, …]` replies (SENTINEL MASTERS entries, ACL GETUSER) as an object. */
export function pairsOf(reply: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const list = Array.isArray(reply) ? reply : [];
  for (let i = 0; i + 1 < list.length; i += 2) out[String(list[i])] = list[i + 1];
  return out;
}
