import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from '../support/cli.js';

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** Whether something accepts connections on the loopback port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

async function until(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  output: () => string,
): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what} after ${timeoutMs} ms:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Date.now() - started;
}

/**
 * `npm start` as a user runs it, in a checkout in miniature: this package.json and src/build.mjs,
 * older than the build, beside this checkout's dist/ (built by `npm ci`). Nothing is rebuilt, and
 * the server that starts is the built one.
 */
function startCheckout(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'cinv-start-'));
  mkdirSync(path.join(root, 'src'));
  const old = new Date('2000-01-01T00:00:00Z');
  for (const file of ['package.json', 'src/build.mjs']) {
    copyFileSync(path.join(ROOT, file), path.join(root, file));
    utimesSync(path.join(root, file), old, old);
  }
  utimesSync(path.join(root, 'src'), old, old);
  symlinkSync(path.join(ROOT, 'dist'), path.join(root, 'dist'));
  return root;
}

describe('npm start passes signals on to the server', function () {
  this.timeout(120_000);
  let root: string;
  let npm: ChildProcess | undefined;
  before(function () {
    if (!existsSync(path.join(ROOT, 'dist', '.build-stamp'))) throw new Error('dist/ is not built: run npm run build');
    root = startCheckout();
  });
  after(() => {
    // a server the test failed to stop is not left holding its port
    if (npm?.exitCode === null) npm.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('frees the port within seconds of a SIGTERM to the npm process, and npm exits', async () => {
    const port = await freePort();
    npm = spawn('npm', ['start'], {
      cwd: root,
      env: {
        ...process.env,
        CINV_TEST_DATABASE_URL: undefined,
        DATABASE_URL: undefined,
        CINV_DATA_DIR: path.join(root, 'data'),
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stdout!.on('data', (chunk) => (output += chunk));
    npm.stderr!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => npm!.once('exit', (code) => resolve(code)));
    await until(
      'no answer on /health',
      90_000,
      async () => {
        if (npm!.exitCode !== null) throw new Error(`npm start exited with ${npm!.exitCode}:\n${output}`);
        return fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => false,
        );
      },
      () => output,
    );
    expect(output, 'nothing was rebuilt').to.not.match(/building cinv/);

    npm.kill('SIGTERM');
    await until(
      'the port is still held',
      10_000,
      async () => !(await listening(port)),
      () => output,
    );
    expect(await exited).to.equal(0);
    expect(output).to.include('"signal":"SIGTERM"');
    expect(output).to.include('shutting down');
  });
});
