import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onRealPostgres } from './db.js';
import { createScratchDatabase } from './scratch-db.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'src/cli.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cinv` from source, as a separate process, with the given environment additions. */
export function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return collect(process.execPath, ['--import', 'tsx', CLI, ...args], env);
}

/**
 * Runs `cinv` from source with its standard output and error on a terminal: a pseudo-terminal of
 * util-linux's `script`. What the terminal showed comes back as `stdout`, with plain line ends.
 */
export async function runCliOnTerminal(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  const quote = (word: string) => `'${word.replace(/'/g, "'\\''")}'`;
  const command = [process.execPath, '--import', 'tsx', CLI, ...args].map(quote).join(' ');
  const result = await collect('script', ['--quiet', '--return', '--command', command, '/dev/null'], env);
  return { ...result, stdout: result.stdout.replace(/\r\n/g, '\n') };
}

function collect(command: string, args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, CINV_TEST_DATABASE_URL: undefined, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Starts `cinv serve` on a free port. `built` runs the compiled server (dist/, as `npm start` does)
 * instead of the sources through tsx, which holds some 80 MB more and compiles on the fly.
 */
export function startServer(
  env: Record<string, string | undefined>,
  options: { built?: boolean } = {},
): Promise<{ child: ChildProcess; port: number; output: () => string }> {
  const args = options.built ? [path.join(ROOT, 'dist/src/cli.js'), 'serve'] : ['--import', 'tsx', CLI, 'serve'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, CINV_TEST_DATABASE_URL: undefined, PORT: '0', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /"port":(\d+)[^\n]*cinv listening/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, port: Number(match[1]), output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
}

export function stopServer(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.removeAllListeners('exit');
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/**
 * Where a suite's `cinv` processes keep their data, for the whole suite: a data directory of its
 * own, and on a real PostgreSQL run a scratch database (with the secret a server needs there).
 * Call it inside `describe`; it registers the hooks and returns the environment to pass.
 */
export function useCliEnvironment(prefix: string): () => Record<string, string | undefined> {
  let dataDir: string;
  let scratch: { url: string; drop(): Promise<void> } | undefined;
  before(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), `${prefix.replace(/_/g, '-')}-`));
    if (onRealPostgres) scratch = await createScratchDatabase(prefix);
  });
  after(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await scratch?.drop();
  });
  return () => ({
    CINV_DATA_DIR: dataDir,
    DATABASE_URL: scratch?.url,
    CINV_SECRET: scratch ? 'cli-test-secret-cli-test-secret-cli-test' : undefined,
    LOG_LEVEL: 'info',
    // whatever answers on the default port of this machine is no business of these commands
    PORT: '0',
  });
}
