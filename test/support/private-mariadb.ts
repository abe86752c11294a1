import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import mariadb, { type Connection } from 'mariadb';
import { startPrivateProcess, type PrivateProcess } from './private-process.js';

const run = promisify(execFile);

export const MARIADBD = '/usr/sbin/mariadbd';
const INSTALL_DB = '/usr/bin/mariadb-install-db';

/** Whether this machine has the MariaDB server binaries a private server is made of. */
export const mariadbInstalled = (): boolean => existsSync(MARIADBD) && existsSync(INSTALL_DB);

const asRoot = process.getuid?.() === 0;

/** Small and quick: the settings a test server needs, nothing a real one would use. */
const SMALL = ['--innodb-buffer-pool-size=16M', '--innodb-log-file-size=8M', '--skip-name-resolve'];

/**
 * A MariaDB server of a test's own: its data directory installed by mariadb-install-db, root
 * reachable without a password over the directory's socket only, TCP on a loopback port.
 */
export interface PrivateMariadb extends PrivateProcess {
  socket: string;
  /** A connection as root over the socket, for the test's own set-up and checks. */
  client(): Promise<Connection>;
}

export async function startPrivateMariadb(name: string, extraArgs: (port: number, dir: string) => string[] = () => []) {
  const server = await startPrivateProcess({
    name,
    command: MARIADBD,
    prepare: async (_port, dir) => {
      await mkdir(path.join(dir, 'tmp'));
      await run(INSTALL_DB, [
        '--no-defaults',
        `--datadir=${path.join(dir, 'data')}`,
        // the shared /tmp is not safe: servers bootstrapping at once collide on their temporary tables' names
        `--tmpdir=${path.join(dir, 'tmp')}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
        ...(asRoot ? ['--user=root'] : []),
        ...SMALL,
      ]);
    },
    args: (port, dir) => [
      '--no-defaults',
      `--datadir=${path.join(dir, 'data')}`,
      `--socket=${path.join(dir, 'sock')}`,
      `--tmpdir=${path.join(dir, 'tmp')}`,
      `--pid-file=${path.join(dir, 'pid')}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      ...(asRoot ? ['--user=root'] : []),
      ...SMALL,
      ...extraArgs(port, dir),
    ],
  });
  const socket = path.join(server.dir, 'sock');
  const own: PrivateMariadb = Object.assign(server, {
    socket,
    client: async () => {
      const connection = await mariadb.createConnection({ socketPath: socket, user: 'root', bigIntAsNumber: true });
      // a server the test stops closes its connections: that is no error of the test
      connection.on('error', () => undefined);
      return connection;
    },
  });
  return own;
}
