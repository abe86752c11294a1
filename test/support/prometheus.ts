import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A real Prometheus scraping a real node_exporter and itself every second, on free loopback ports,
 * from the Debian packages (`prometheus`, `prometheus-node-exporter`).
 */
export interface PrometheusStack {
  url: string;
  nodeExporter: string;
  stopNodeExporter(): Promise<void>;
  stop(): Promise<void>;
}

const which = (names: string[]): string | undefined =>
  names.find((name) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0);

export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN ?? which(['prometheus']);
export const NODE_EXPORTER_BIN = process.env.NODE_EXPORTER_BIN ?? which(['prometheus-node-exporter', 'node_exporter']);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await condition()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function query(url: string, expression: string): Promise<unknown[]> {
  const reply = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expression)}`);
  return ((await reply.json()) as { data: { result: unknown[] } }).data.result;
}

/** Starts both and waits for the first scrapes of the node_exporter and of Prometheus itself. */
export async function startPrometheusStack(): Promise<PrometheusStack> {
  if (!PROMETHEUS_BIN || !NODE_EXPORTER_BIN)
    throw new Error('prometheus and prometheus-node-exporter are not installed');
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-prometheus-'));
  const [exporterPort, prometheusPort] = [await freePort(), await freePort()];
  const nodeExporter = `127.0.0.1:${exporterPort}`;
  const url = `http://127.0.0.1:${prometheusPort}`;
  writeFileSync(
    path.join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s }',
      'scrape_configs:',
      `  - { job_name: prometheus, static_configs: [ { targets: ['127.0.0.1:${prometheusPort}'] } ] }`,
      `  - { job_name: node, static_configs: [ { targets: ['${nodeExporter}'] } ] }`,
      '',
    ].join('\n'),
  );
  const exporter = spawn(NODE_EXPORTER_BIN, [`--web.listen-address=${nodeExporter}`], { stdio: 'ignore' });
  const prometheus = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${prometheusPort}`,
    ],
    { stdio: 'ignore' },
  );
  const stack: PrometheusStack = {
    url,
    nodeExporter,
    stopNodeExporter: () => stopProcess(exporter),
    async stop() {
      await Promise.all([stopProcess(exporter), stopProcess(prometheus)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await until(
      async () => (await query(url, 'up == 1')).length === 2 && (await query(url, 'node_uname_info')).length === 1,
      'the first scrapes',
    );
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return stack;
}

/** Waits until Prometheus reports the node_exporter target down. */
export async function waitForTargetDown(stack: PrometheusStack): Promise<void> {
  await until(
    async () => (await query(stack.url, `up{instance="${stack.nodeExporter}"} == 0`)).length === 1,
    'the node_exporter target going down',
  );
}
