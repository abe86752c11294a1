/**
 * Web interface benchmark: the size of what a browser loads first, and the time from navigating to
 * the inventory view to its first page of rows in a real Chromium, against `cinv serve` on the list
 * benchmark's inventory (7 generated clusters, 1 006 838 CIs by default, in cinv_bench_list).
 *
 *   npm run bench -- ui [pods per cluster]
 *
 * Targets: the initial JavaScript at most 200 KB gzipped; time to first render is reported for a
 * cold browser (nothing cached) and a warm one (assets cached), median of five loads each, on the
 * default view and on a view filtered by a raw_data path and sorted by name.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { ROOT } from '../support/cli.js';
import { benchDatabase, benchKey, serveBench, type Figure, type RunningServer } from './common.js';
import { clusterShape, SERVE_ENV, seedClusters } from './list.js';
import { LARGE_CLUSTER } from './cluster.js';

const LOADS = 5;

/** Gzipped bytes of the scripts index.html loads, of its stylesheet, and of every chunk. */
function bundleSizes(): { initialJs: number; css: number; allJs: number } {
  const dir = path.join(ROOT, 'dist', 'ui');
  const html = readFileSync(path.join(dir, 'index.html'), 'utf8');
  const gz = (file: string) => gzipSync(readFileSync(path.join(dir, file.replace(/^\/ui\//, '')))).length;
  const scripts = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
  const styles = [...html.matchAll(/href="(\/ui\/assets\/[^"]+\.css)"/g)].map((m) => m[1]!);
  const chunks = readdirSync(path.join(dir, 'assets')).filter((f) => f.endsWith('.js'));
  return {
    initialJs: scripts.reduce((sum, file) => sum + gz(file), 0),
    css: styles.reduce((sum, file) => sum + gz(file), 0),
    allJs: chunks.reduce((sum, file) => sum + gz(`assets/${file}`), 0),
  };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function firstRender(browser: Browser, base: string, key: string, view: string, warm: boolean): Promise<number> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  try {
    const page = await context.newPage();
    const signedIn = await page.request.post(`${base}/auth/session`, {
      data: { api_key: key },
      headers: { origin: base },
    });
    if (!signedIn.ok()) throw new Error(`sign-in: ${signedIn.status()} ${await signedIn.text()}`);
    if (warm) {
      await page.goto(`${base}/ui${view}`);
      await page.locator('table[aria-label="Configuration items"] tbody tr').first().waitFor();
      await page.goto('about:blank');
    }
    const started = performance.now();
    await page.goto(`${base}/ui${view}`);
    await page.locator('table[aria-label="Configuration items"] tbody tr').first().waitFor();
    return performance.now() - started;
  } finally {
    await context.close();
  }
}

export async function benchUi(pods = LARGE_CLUSTER.pods, clusters = 7): Promise<Figure[]> {
  const database = 'cinv_bench_list';
  const sql = await benchDatabase(database);
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  try {
    await seedClusters(sql, clusterShape(pods), clusters);
    const [{ cis }] = await sql<[{ cis: number }]>`select count(*)::int as cis from configuration_items`;
    const key = await benchKey(sql, 'adm');
    server = await serveBench(database, SERVE_ENV);
    const sizes = bundleSizes();
    browser = await launchChromium();
    const views: [string, string][] = [
      ['default view', '/inventory'],
      [
        'raw_data filter, sorted by name',
        '/inventory?filter=raw_data.spec.nodeName%3Aeq%3Anode-1&sort_by=name&sort_order=asc',
      ],
    ];
    console.log(
      `${cis} CIs; initial JS ${(sizes.initialJs / 1024).toFixed(1)} KB gzipped, CSS ${(sizes.css / 1024).toFixed(1)} KB, all chunks ${(sizes.allJs / 1024).toFixed(1)} KB`,
    );
    const figures: Figure[] = [
      { bench: 'ui', path: 'initial JavaScript (gzip)', value: sizes.initialJs / 1024, unit: 'KB', target: 200 },
      { bench: 'ui', path: 'stylesheet (gzip)', value: sizes.css / 1024, unit: 'KB' },
      { bench: 'ui', path: 'every view loaded (gzip)', value: sizes.allJs / 1024, unit: 'KB' },
    ];
    for (const [label, view] of views) {
      for (const warm of [false, true]) {
        const times: number[] = [];
        for (let i = 0; i < LOADS; i++) times.push(await firstRender(browser, server.base, key, view, warm));
        console.log(`  ${label}, ${warm ? 'warm' : 'cold'}: ${times.map((t) => t.toFixed(0)).join(', ')} ms`);
        figures.push({
          bench: 'ui',
          path: `first render at ${cis} CIs, ${label}, ${warm ? 'warm' : 'cold'} (median)`,
          value: median(times),
          unit: 'ms',
        });
      }
    }
    return figures;
  } finally {
    await browser?.close();
    await server?.stop();
    await sql.end();
  }
}
