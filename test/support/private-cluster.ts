import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The machine's PostgreSQL binaries (initdb, pg_ctl), newest major version first. */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const found = versions.map((v) => path.join(root, v, 'bin')).find((dir) => existsSync(path.join(dir, 'pg_ctl')));
  if (!found) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql (initdb, pg_ctl)');
  return found;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A PostgreSQL cluster of the test's own, which the test may stop and start at will (an outage).
 * PostgreSQL refuses to run as root, so under root the server runs as the `postgres` user.
 */
export interface PrivateCluster {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

type Tool = (tool: string, args: string[]) => Promise<unknown>;

/** A cluster of its own: `init` fills the data directory (initdb, or a base backup of another). */
async function privateCluster(init: (pg: Tool, dataDir: string) => Promise<void>): Promise<PrivateCluster> {
  const bin = binDir();
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-pg-'));
  const dataDir = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    const { stdout: gidOut } = await run('id', ['-g', 'postgres']);
    chownSync(dir, uid, Number(gidOut.trim()));
  }
  const pg: Tool = (tool, args) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args]) : run(path.join(bin, tool), args);
  const port = await freePort();
  await init(pg, dataDir);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40`;
  const logFile = path.join(dir, 'server.log');
  const cluster: PrivateCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async start() {
      await pg('pg_ctl', ['-D', dataDir, '-o', options, '-l', logFile, '-w', '-t', '30', 'start']);
    },
    async stop() {
      await pg('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '30', 'stop']);
    },
    async destroy() {
      await cluster.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}

export function createPrivateCluster(): Promise<PrivateCluster> {
  return privateCluster(async (pg, dataDir) => {
    await pg('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  });
}

/**
 * A streaming replica of a running private cluster: a base backup of it (`pg_basebackup -R`, which
 * writes the standby's connection to it), started as a hot standby that replays its WAL.
 */
export function createStandby(primary: PrivateCluster): Promise<PrivateCluster> {
  const { hostname, port } = new URL(primary.url);
  return privateCluster(async (pg, dataDir) => {
    await pg('pg_basebackup', [
      '-D',
      dataDir,
      '-h',
      hostname,
      '-p',
      port,
      '-U',
      'postgres',
      '-R',
      '-X',
      'stream',
      '--no-sync',
    ]);
  });
}
