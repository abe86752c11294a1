import type { Sql } from 'postgres';
import { unavailable } from '../errors.js';
import type { DatabaseHealth } from './health.js';

export interface GateOptions {
  /** Connections of the pool: at most this many queries or transactions hold one at a time. */
  capacity: number;
  /** How long a query may wait for a connection before the request is answered 503. */
  acquireTimeoutMs: number;
}

interface Waiter {
  since: number;
  /** Waits for as long as it takes, and is not refused while the database is down. */
  patient: boolean;
  admit(): void;
  refuse(error: Error): void;
}

/**
 * Admission to the connection pool with a deadline. postgres.js queues a query for as long as it
 * takes to get a connection, with no bound; when the database is down or every connection is busy
 * that turns into requests that hang for the length of an outage. The gate hands out one slot per
 * pooled connection, so postgres.js never queues; whoever cannot get a slot within the acquire
 * timeout, or asks while the database is known to be down, gets a 503 to retry.
 */
export class DatabaseGate {
  private free: number;
  private readonly waiters: Waiter[] = [];

  constructor(
    private readonly options: GateOptions,
    private readonly health: DatabaseHealth | undefined,
  ) {
    this.free = options.capacity;
  }

  get capacity(): number {
    return this.options.capacity;
  }

  /** Slots in use right now. */
  get busy(): number {
    return this.options.capacity - this.free;
  }

  /** Callers waiting for a slot, and how long the first of them has waited. */
  get queue(): { waiting: number; oldestWaitMs: number } {
    const oldest = this.waiters[0];
    return { waiting: this.waiters.length, oldestWaitMs: oldest ? Math.round(performance.now() - oldest.since) : 0 };
  }

  acquire(): Promise<void> {
    if (this.health && !this.health.up) return Promise.reject(databaseDown());
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        since: performance.now(),
        patient: false,
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
        refuse: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.remove(waiter);
        reject(
          unavailable('The database is busy: no connection became free in time; retry shortly', 'database_busy', 1),
        );
      }, this.options.acquireTimeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * A slot with no deadline, for work that must wait its turn rather than fail: the turns of other
   * processes at the embedded database, which queue behind the requests already waiting.
   */
  acquireWithoutDeadline(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.waiters.push({ since: performance.now(), patient: true, admit: resolve, refuse: () => undefined });
    });
  }

  release(): void {
    if (this.health && !this.health.up) {
      // nobody waits for a database that is down: the queue is refused at once
      for (const waiter of this.waiters.filter((w) => !w.patient)) {
        this.remove(waiter);
        waiter.refuse(databaseDown());
      }
    }
    const next = this.waiters.shift();
    if (next) next.admit();
    else this.free++;
  }

  private remove(waiter: Waiter): void {
    const index = this.waiters.indexOf(waiter);
    if (index !== -1) this.waiters.splice(index, 1);
  }
}

const databaseDown = () => unavailable('The database is unavailable; retry shortly', 'database_unavailable', 5);

/** A postgres.js query before it runs; `handle` is where it is handed to the pool. */
interface PendingQuery {
  executed: boolean;
  handler(query: PendingQuery): void;
  reject(error: unknown): void;
  handle(): Promise<void>;
}

const isQuery = (value: unknown): value is PendingQuery =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as PendingQuery).handle === 'function' &&
  'executed' in value;

/**
 * postgres.js hands a query to its pool in `handle()`, which `then`, `catch`, `finally`,
 * `execute` and cursors all go through, once. The gated query takes a slot first and gives it back
 * when it settles. Queries built as fragments of other queries are never handled, so never gated.
 */
function gateQuery<T>(query: T, gate: DatabaseGate, health: DatabaseHealth | undefined): T {
  if (!isQuery(query)) return query;
  query.handle = async function handleGated(this: PendingQuery) {
    if (this.executed) return;
    this.executed = true;
    try {
      await gate.acquire();
    } catch (error) {
      this.reject(error);
      return;
    }
    // Promise.prototype.then observes the outcome without handing the query to the pool again
    Promise.prototype.then.call(
      this,
      () => gate.release(),
      (error: unknown) => {
        health?.observe(error);
        gate.release();
      },
    );
    this.handler(this);
  };
  return query;
}

/**
 * The same `sql` with every pool query, transaction and reserved connection admitted through the
 * gate. Statements inside a transaction or on a reserved connection use the slot already held.
 */
export function gateSql(sql: Sql, gate: DatabaseGate, health?: DatabaseHealth): Sql {
  const held = async <T>(work: () => Promise<T>): Promise<T> => {
    await gate.acquire();
    try {
      return await work();
    } catch (error) {
      health?.observe(error);
      throw error;
    } finally {
      gate.release();
    }
  };
  return new Proxy(sql, {
    apply(target, thisArg, args) {
      return gateQuery(Reflect.apply(target, thisArg, args), gate, health);
    },
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property === 'unsafe' || property === 'file') {
        return (...args: unknown[]) => gateQuery((value as (...a: unknown[]) => unknown)(...args), gate, health);
      }
      if (property === 'begin') {
        return (...args: unknown[]) => held(() => (value as (...a: unknown[]) => Promise<unknown>)(...args));
      }
      if (property === 'reserve') {
        return async () => {
          await gate.acquire();
          try {
            const reserved = await (value as () => Promise<Sql & { release(): void }>)();
            const release = reserved.release.bind(reserved);
            let released = false;
            reserved.release = () => {
              if (released) return;
              released = true;
              release();
              gate.release();
            };
            return reserved;
          } catch (error) {
            gate.release();
            health?.observe(error);
            throw error;
          }
        };
      }
      return value;
    },
  });
}
