/**
 * NDJSON push benchmark: a universal-format snapshot of SIZE megabytes (default 500) generated on
 * the fly, streamed as `application/x-ndjson` into `cinv serve` (a process of its own) and
 * reconciled there. Reports the push's throughput and the server's peak resident memory during it
 * (VmHWM, reset just before). The pods carry a kubectl last-applied-configuration annotation, as
 * real ones do, so that records are about 2.5 kB each. The database is created afresh each run,
 * so every run measures a first load.
 *
 *   npm run bench -- ndjson [megabytes]
 */
import { request } from 'node:http';
import { Readable } from 'node:stream';
import postgres from 'postgres';
import {
  benchDatabase,
  benchKey,
  memoryOf,
  resetPeakMemory,
  serveBench,
  serverUrl,
  type Figure,
  type RunningServer,
} from './common.js';
import { SERVE_ENV } from './list.js';

const DATABASE = 'cinv_bench_ndjson';

function podLine(index: number): string {
  const name = `web-${index}`;
  const namespace = `ns-${index % 40}`;
  const containers = [0, 1].map((c) => ({
    name: `app-${c}`,
    image: `registry.example.com/team-${index % 17}/app-${c}:1.${index % 30}.${c}`,
    env: Array.from({ length: 12 }, (_, e) => ({
      name: `SETTING_${e}`,
      value: `value-${(index * 31 + e) % 997}-of-the-${c}th-container`,
    })),
    resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
  }));
  const spec = { nodeName: `node-${index % 300}`, serviceAccountName: 'default', containers };
  const record = {
    external_id: `pod/${namespace}/${name}`,
    ci_type: 'k8s.pod',
    name,
    namespace,
    raw_data: {
      metadata: {
        name,
        namespace,
        uid: `00000000-0000-4000-8000-${index.toString(16).padStart(12, '0')}`,
        labels: { app: `app-${index % 500}`, tier: index % 2 ? 'web' : 'worker' },
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace },
            spec,
          }),
        },
      },
      spec,
      status: { phase: 'Running', podIP: `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}` },
    },
    type_data: { phase: 'Running', node: spec.nodeName, restarts: index % 3 },
  };
  return `${JSON.stringify(record)}\n`;
}

/** Lines until `bytes` are produced, in chunks of about 1 MB. */
function* snapshot(bytes: number, counted: { records: number; bytes: number }): Generator<string> {
  let chunk = '';
  while (counted.bytes < bytes) {
    const line = podLine(counted.records++);
    chunk += line;
    counted.bytes += Buffer.byteLength(line);
    if (chunk.length >= 1 << 20) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

function push(url: string, key: string, body: Readable): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/x-ndjson', 'x-api-key': key } },
      (incoming) => {
        let text = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (chunk: string) => (text += chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, text }));
        incoming.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    body.pipe(outgoing);
  });
}

export async function benchNdjson(megabytes = 500): Promise<Figure[]> {
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${DATABASE}" with (force)`);
  await admin.end();
  const sql = await benchDatabase(DATABASE);
  let server: RunningServer | undefined;
  try {
    const key = await benchKey(sql, 'adm');
    server = await serveBench(DATABASE, SERVE_ENV);
    const created = await fetch(`${server.base}/api/v1/sources`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'agents', collector_type: 'universal' }),
    });
    const source = (await created.json()) as { id: number };
    const startRss = memoryOf(server.pid, 'VmRSS');
    resetPeakMemory(server.pid);
    const counted = { records: 0, bytes: 0 };
    const started = performance.now();
    const reply = await push(
      `${server.base}/api/v1/sources/${source.id}/ingest?mode=snapshot&scope_id=bench`,
      key,
      Readable.from(snapshot(megabytes * 1e6, counted)),
    );
    const took = (performance.now() - started) / 1000;
    const peakRss = memoryOf(server.pid, 'VmHWM');
    if (reply.status !== 200) throw new Error(`the push was answered ${reply.status}: ${reply.text.slice(0, 500)}`);
    const [stored] = await sql<{ n: number }[]>`select count(*)::int as n from configuration_items`;
    if (stored!.n !== counted.records) throw new Error(`${stored!.n} CIs stored of ${counted.records} pushed`);
    const mb = counted.bytes / 1e6;
    console.log(
      `ndjson push: ${counted.records} records, ${mb.toFixed(0)} MB in ${took.toFixed(1)} s = ${(mb / took).toFixed(2)} MB/s, ` +
        `${Math.round(counted.records / took)} records/s; server RSS ${startRss.toFixed(0)} MB before, peak ${peakRss.toFixed(0)} MB`,
    );
    const full = megabytes >= 500;
    return [
      {
        bench: 'ndjson',
        path: `push of ${mb.toFixed(0)} MB (${counted.records} records), first load`,
        value: counted.records / took,
        unit: 'records/s',
      },
      { bench: 'ndjson', path: 'server RSS before the push', value: startRss, unit: 'MB' },
      {
        bench: 'ndjson',
        path: 'server peak RSS during the push (VmHWM)',
        value: peakRss,
        unit: 'MB',
        target: full ? 200 : undefined,
      },
    ];
  } finally {
    await server?.stop();
    await sql.end();
  }
}
