import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A loopback port nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on a loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Waits until `ready` holds, or fails after `timeoutMs` with what the server wrote to its log. */
export async function waitFor(ready: () => Promise<boolean>, timeoutMs: number, logOf: () => string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await ready().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the private server did not come up in ${timeoutMs} ms:\n${logOf().slice(-2000)}`);
}

/** A directory of a test's own under the temporary one, removed by `remove`. */
export function privateDirectory(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), `cinv-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A server process of a test's own: started from the machine's binary with the test's arguments,
 * its output kept in a log file of its directory, stopped (SIGTERM, then SIGKILL) and started again
 * at will, so that a test can take it down as an outage.
 */
export interface PrivateProcess {
  readonly port: number;
  readonly dir: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  destroy(): Promise<void>;
  log(): string;
}

export interface ProcessSpec {
  /** Names the directory (`cinv-<name>-…`) and errors. */
  name: string;
  command: string;
  /** The arguments, given the port and the directory. */
  args: (port: number, dir: string) => string[];
  env?: (port: number, dir: string) => NodeJS.ProcessEnv;
  /** Run once in the directory before the first start (an install of a data directory). */
  prepare?: (port: number, dir: string) => Promise<void>;
  /** When the server is ready; default: its port accepts connections. */
  ready?: (port: number) => Promise<boolean>;
  startTimeoutMs?: number;
  /** A port chosen by the caller (a server with several ports lays them out from it). */
  port?: number;
}

export async function startPrivateProcess(spec: ProcessSpec): Promise<PrivateProcess> {
  if (!existsSync(spec.command)) throw new Error(`${spec.name}: ${spec.command} is not installed on this machine`);
  const port = spec.port ?? (await freePort());
  const { dir, remove } = privateDirectory(spec.name);
  const logFile = path.join(dir, 'server.log');
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  let child: ChildProcess | undefined;
  await spec.prepare?.(port, dir);
  const ready = spec.ready ?? accepts;
  const server: PrivateProcess = {
    port,
    dir,
    log,
    async start() {
      const out = openSync(logFile, 'a');
      child = spawn(spec.command, spec.args(port, dir), {
        cwd: dir,
        env: { ...process.env, ...spec.env?.(port, dir) },
        stdio: ['ignore', out, out],
      });
      let exited = false;
      child.once('exit', () => (exited = true));
      const until = Date.now() + (spec.startTimeoutMs ?? 30_000);
      while (!(await ready(port).catch(() => false))) {
        if (exited || Date.now() > until) {
          await server.stop();
          throw new Error(`${spec.name} did not start (${exited ? 'it exited' : 'timed out'}):\n${log().slice(-2000)}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      const killer = setTimeout(() => running.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    },
    async destroy() {
      await server.stop();
      remove();
    },
  };
  await server.start();
  return server;
}
