// A PostgreSQL server of one test run's own (the machine's initdb and pg_ctl, on a free loopback
// port, as the `postgres` user when run as root), for the postgresql collector's suite: that
// collector discovers every database on its server, so on a server shared with runs side by side
// (whose scratch databases come and go) it would see their databases appear and vanish.
//
//   node .ci/private-pg.mjs start       prints `DIR URL`: the server's directory and URL
//   node .ci/private-pg.mjs stop DIR    stops it and removes DIR
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const [action, given] = process.argv.slice(2);
if (!(action === 'start' || (action === 'stop' && given))) {
  console.error('usage: node .ci/private-pg.mjs start | stop DIR');
  process.exit(2);
}
// its own directory straight under the temporary one, which the postgres user can reach
const dir = given ?? mkdtempSync(path.join(tmpdir(), 'cinv-ci-pg-'));
const dataDir = path.join(dir, 'data');
const asRoot = process.getuid?.() === 0;

function binDir() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)) : [];
  const found = versions
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => path.join(root, v, 'bin'))
    .find((bin) => existsSync(path.join(bin, 'pg_ctl')));
  if (!found) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return found;
}

function pg(tool, args) {
  const command = path.join(binDir(), tool);
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  // from a directory the postgres user may enter: the caller's may be private to root
  execFileSync(file, argv, { cwd: tmpdir(), stdio: ['ignore', 'ignore', 'inherit'] });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

if (action === 'start') {
  if (asRoot) {
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  pg('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40`;
  pg('pg_ctl', ['-D', dataDir, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  console.log(`${dir} postgres://postgres@127.0.0.1:${port}/postgres`);
} else {
  if (existsSync(dataDir)) {
    try {
      pg('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']);
    } catch {
      // already stopped: only the directory is left to remove
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
