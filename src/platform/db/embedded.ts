import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { embeddedClientOptions, type RawDatabase } from './database.js';
import { SessionSocketServer } from './session-socket.js';

const SOCKET_NAME = '.s.PGSQL.5432';
const LOCK_NAME = 'pglite.lock';
// Unix socket paths are limited to 107 bytes on Linux.
const MAX_SOCKET_PATH = 100;

export function embeddedSocketPath(dataDir: string): string {
  return path.join(dataDir, SOCKET_NAME);
}

function socketIsLive(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The data directory belongs to one process at a time. A lock file holding the owner's pid guards
 * it; a lock left behind by a dead process is taken over.
 */
function acquireLock(dataDir: string): () => void {
  const lockFile = path.join(dataDir, LOCK_NAME);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(readFileSync(lockFile, 'utf8'));
      if (Number.isInteger(owner) && owner !== process.pid && processIsAlive(owner)) {
        throw new Error(`the embedded database in ${dataDir} is in use by process ${owner}`, { cause: error });
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not lock the embedded database in ${dataDir}`);
}

export interface EmbeddedHostOptions {
  /** Directory for PostgreSQL's files; undefined keeps the database in memory (tests). */
  pgDataDir: string | undefined;
  socketPath: string;
}

/**
 * Hosts a PGlite database behind a PostgreSQL-protocol socket, so that this process and any `cinv`
 * command started beside it talk to it with the same postgres.js client and SQL as a real server.
 * This process's own connections identify themselves to the socket server: their queries are
 * admitted by this process's gate already, where the turns of other processes queue as well.
 */
export async function hostEmbedded(options: EmbeddedHostOptions): Promise<RawDatabase> {
  const db = await PGlite.create({ dataDir: options.pgDataDir, extensions: { pg_trgm } });
  rmSync(options.socketPath, { force: true });
  const server = new SessionSocketServer({ db, path: options.socketPath, maxConnections: 16 });
  await server.start();
  // The pool prepares its statements, as on a server: PGlite plans in WebAssembly, and planning
  // every query again (sizing each index of its tables from their files on the way) was more than
  // half the time of a CI detail. The socket server closes what a departed connection prepared.
  // postgres.js takes a `socket` factory that its type declarations do not list.
  const own = (name?: string) =>
    postgres(
      Object.assign(embeddedClientOptions(options.socketPath), {
        socket: () => server.connectOwn(),
        ...(name ? { connection: { application_name: name } } : { prepare: true }),
      }),
    );
  const sql = own();
  return {
    sql,
    kind: 'embedded',
    connectOne: () => own('cinv-health'),
    admitTurnsThrough: (gate) => server.admitThrough(gate),
    onForeignWrites: (listener) => server.onForeignUnit(listener),
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await db.close();
      rmSync(options.socketPath, { force: true });
    },
  };
}

/**
 * Opens the embedded database in `dataDir`. When a cinv process already serves it, this joins
 * that process through its socket instead of opening the files a second time.
 */
export async function openEmbedded(dataDir: string, options: { join: boolean } = { join: true }): Promise<RawDatabase> {
  mkdirSync(dataDir, { recursive: true });
  const socketPath = embeddedSocketPath(dataDir);
  if (socketPath.length > MAX_SOCKET_PATH) {
    throw new Error(
      `CINV_DATA_DIR is too long for a unix socket path (${socketPath.length} > ${MAX_SOCKET_PATH} bytes)`,
    );
  }
  if (await socketIsLive(socketPath)) {
    if (!options.join) throw new Error(`the embedded database in ${dataDir} is already served by another cinv process`);
    const sql = postgres(embeddedClientOptions(socketPath));
    return {
      sql,
      kind: 'embedded',
      connectOne: () =>
        postgres({ ...embeddedClientOptions(socketPath), connection: { application_name: 'cinv-health' } }),
      close: () => sql.end({ timeout: 5 }),
    };
  }
  const release = acquireLock(dataDir);
  try {
    const database = await hostEmbedded({ pgDataDir: path.join(dataDir, 'pgdata'), socketPath });
    return {
      ...database,
      async close() {
        try {
          await database.close();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}
