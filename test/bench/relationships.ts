/**
 * Relationship walk benchmark: one node with N pods running on it (default 100 000: the generated
 * cluster with a single node, kept in cinv_bench_relationships between runs), its relationships
 * read through `cinv serve` with limit=5000, following next_cursor to the end. The figure is the
 * time of one whole walk (the median of three, after one not counted); the walk must hand out
 * every relationship and report them all in `total`.
 *
 *   npm run bench -- relationships [pods]
 */
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { benchDatabase, benchKey, seconds, serveBench, type Figure, type RunningServer } from './common.js';
import { clusterShape, SERVE_ENV, seedClusters } from './list.js';

interface Walk {
  seconds: number;
  /** Each page's answer time, in ms. */
  pageMs: number[];
  pages: number;
  items: number;
  total: number;
}

async function walk(base: string, key: string, ciId: string): Promise<Walk> {
  const started = performance.now();
  let cursor: string | null = null;
  let pages = 0;
  const pageMs: number[] = [];
  let items = 0;
  let total: number;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const asked = performance.now();
    const response = await fetch(`${base}/api/v1/configuration-items/${ciId}/relationships?limit=5000${query}`, {
      headers: { 'x-api-key': key },
    });
    const body = (await response.json()) as { items: unknown[]; total: number; next_cursor: string | null };
    if (!response.ok) throw new Error(`page ${pages + 1}: ${response.status} ${JSON.stringify(body)}`);
    pageMs.push(performance.now() - asked);
    pages++;
    items += body.items.length;
    total = body.total;
    cursor = body.next_cursor;
  } while (cursor);
  return { seconds: seconds(started), pageMs, pages, items, total };
}

export async function benchRelationships(pods = 100_000): Promise<Figure[]> {
  const database = 'cinv_bench_relationships';
  const sql = await benchDatabase(database);
  let server: RunningServer | undefined;
  try {
    await seedClusters(sql, { ...clusterShape(pods), nodes: 1 }, 1);
    const [node] = await sql<{ ci_id: string }[]>`
      select ci_id from configuration_items where tenant_id = ${DEFAULT_TENANT_ID} and external_id = 'node/node-0'`;
    const key = await benchKey(sql);
    server = await serveBench(database, SERVE_ENV);
    await walk(server.base, key, node!.ci_id);
    const walks: Walk[] = [];
    for (let i = 0; i < 3; i++) walks.push(await walk(server.base, key, node!.ci_id));
    for (const w of walks) {
      if (w.total !== pods || w.items !== pods)
        throw new Error(`the walk reported total ${w.total} and handed out ${w.items} relationships, not ${pods}`);
    }
    const median = [...walks].sort((a, b) => a.seconds - b.seconds)[1]!;
    const later = median.pageMs.slice(1).sort((a, b) => a - b);
    console.log(
      `walks of ${median.pages} pages, ${median.items} relationships: ${walks.map((w) => `${w.seconds.toFixed(2)} s`).join(', ')}; ` +
        `median walk: first page ${median.pageMs[0]!.toFixed(0)} ms (counts the total), later pages ${later[Math.floor(later.length / 2)]?.toFixed(0) ?? '-'} ms each (median)`,
    );
    return [
      {
        bench: 'relationships',
        path: `walk of ${pods} in pages of 5000 (${median.pages} pages)`,
        value: median.seconds,
        unit: 's',
        target: pods >= 100_000 ? 1.5 : undefined,
      },
    ];
  } finally {
    await server?.stop();
    await sql.end();
  }
}
