import type { Sql } from '../db/database.js';
import type { Principal } from './principal.js';

/** Keys a process keeps at most; past it the cache starts over rather than tracking use. */
const MAX_ENTRIES = 10_000;

/** The channel sql/0031's triggers notify on every change to what a key or user may do. */
export const PRINCIPALS_CHANNEL = 'cinv_principals';

interface Entry {
  principal: Principal;
  storedAt: number;
  /** When the key expires (ms), or null. */
  expiresAt: number | null;
}

/**
 * The principals of recently used API keys, so that a request need not read its key's rights from
 * the database each time (a round trip and a result to decode, on every request). Revocation
 * must still count from the next request, so the cache holds only while it is told of every change:
 * - other processes' changes (and the CLI's) arrive on PRINCIPALS_CHANNEL, and drop everything;
 * - this process's own writes drop everything when their request ends, before its response goes
 *   out (`forget`), so that a client's next request never beats the notification;
 * - nothing is kept before the listening connection is up, and everything is dropped whenever it
 *   (re)connects, since notifications sent while it was down are lost;
 * - an entry lives at most `maxAgeMs`: the bound on a change going unseen when that connection is
 *   cut without the process noticing (a silent network partition);
 * - a lookup that read the database before a drop does not store what it read after it
 *   (`generation`).
 * Keyed by a digest of the key, never the key.
 */
export class PrincipalCache {
  private readonly entries = new Map<string, Entry>();
  private listening = false;
  /** Moves on at every drop; a lookup stores its result only if it has not moved meanwhile. */
  generation = 0;

  constructor(private readonly maxAgeMs: number) {}

  get(keyHash: string, now: number): Principal | undefined {
    const entry = this.entries.get(keyHash);
    if (!entry) return undefined;
    if (
      now - entry.storedAt >= this.maxAgeMs ||
      (entry.expiresAt !== null && entry.expiresAt <= now) ||
      now < entry.storedAt
    ) {
      this.entries.delete(keyHash);
      return undefined;
    }
    return entry.principal;
  }

  /** Keeps what a lookup begun at `generation` read, unless something changed since. */
  store(keyHash: string, principal: Principal, expiresAt: Date | null, generation: number, now: number): void {
    if (!this.listening || generation !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(keyHash, { principal, storedAt: now, expiresAt: expiresAt?.getTime() ?? null });
  }

  /** Drops everything: something a principal depends on may have changed. */
  forget(): void {
    this.generation++;
    this.entries.clear();
  }

  /** The listening connection is up (again): what was missed while it was down is dropped. */
  listened(): void {
    this.forget();
    this.listening = true;
  }

  /** Stops keeping anything (the listener is being closed). */
  close(): void {
    this.listening = false;
    this.forget();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** What a principal cache needs of the database: where to hear of changes made by other processes. */
export interface ChangeSource {
  kind: 'embedded' | 'postgres';
  sql: Sql;
  onForeignWrites?(listener: () => void): () => void;
}

/**
 * A cache that hears of every change other processes make, and `stop` to close it; undefined where
 * it could not. On a PostgreSQL server it keeps principals from the moment it listens on
 * PRINCIPALS_CHANNEL. On the embedded database this process hosts, other processes (`cinv` on the
 * command line) reach the data only through this process's socket, and whatever they run drops
 * everything once it is done: it may have written.
 */
export async function principalCacheFor(
  database: ChangeSource,
  maxAgeMs: number,
): Promise<{ cache: PrincipalCache; stop(): Promise<void> } | undefined> {
  if (maxAgeMs <= 0) return undefined;
  const cache = new PrincipalCache(maxAgeMs);
  if (database.kind === 'postgres') {
    const listener = await database.sql.listen(
      PRINCIPALS_CHANNEL,
      () => cache.forget(),
      () => cache.listened(),
    );
    return {
      cache,
      async stop() {
        cache.close();
        await listener.unlisten();
      },
    };
  }
  if (!database.onForeignWrites) return undefined;
  const unsubscribe = database.onForeignWrites(() => cache.forget());
  cache.listened();
  return {
    cache,
    async stop() {
      cache.close();
      unsubscribe();
    },
  };
}
