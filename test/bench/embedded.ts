/**
 * Embedded database benchmark: the list mix of the list benchmark (default page, two filters, a
 * raw_data filter, detail) served by `cinv serve` on the embedded database (PGlite, inside the
 * server process) and on PostgreSQL, with the same data: one generated cluster (143 834 CIs by
 * default), kept between runs in EMBEDDED_DIR and in cinv_bench_embedded. autocannon drives each
 * path with 16 connections as in the list benchmark.
 *
 * Target: the embedded database serves at least 0.35 of PostgreSQL's requests per second on every
 * path: it is one single-threaded session inside the API's own process, against a server with a
 * process per connection.
 *
 *   npm run bench -- embedded [pods]
 */
import { openEmbedded } from '../../src/platform/db/embedded.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { LARGE_CLUSTER } from './cluster.js';
import { benchDatabase, benchKey, serveBench, type Figure, type RunningServer } from './common.js';
import {
  clusterShape,
  detailIdsOf,
  drive,
  listPaths,
  SERVE_ENV,
  seedClusters,
  type ListPath,
  type Load,
  type Measured,
} from './list.js';

/** Kept out of /tmp, which may be cleared between runs; short enough for the socket path. */
const EMBEDDED_DIR = process.env.CINV_BENCH_EMBEDDED_DIR ?? '/var/tmp/cinv-bench-embedded';

async function measureAll(server: RunningServer, key: string, paths: ListPath[], load: Load): Promise<Measured[]> {
  const auth = { 'x-api-key': key };
  const results: Measured[] = [];
  for (const p of paths) {
    const probe = await fetch(server.base + p.pathOf(0), { headers: auth });
    if (!probe.ok) throw new Error(`${p.pathOf(0)}: ${probe.status} ${await probe.text()}`);
    results.push(await drive(server.base, auth, p.pathOf, load));
  }
  return results;
}

export async function benchEmbedded(pods = LARGE_CLUSTER.pods): Promise<Figure[]> {
  const shape = clusterShape(pods);
  const load: Load = { connections: 16, seconds: 10, warmupSeconds: 2 };
  const database = 'cinv_bench_embedded';

  // the embedded database is seeded by this process, then handed over to the server
  const embedded = await openEmbedded(EMBEDDED_DIR, { join: false });
  let embeddedKey: string;
  let embeddedIds: string[];
  try {
    await migrate(embedded.sql);
    // the reconcile batch cinv itself uses on the embedded database (CINV_RECONCILE_BATCH_SIZE)
    await seedClusters(embedded.sql, shape, 1, { batchSize: 1000 });
    embeddedKey = await benchKey(embedded.sql);
    embeddedIds = await detailIdsOf(embedded.sql);
  } finally {
    await embedded.close();
  }

  const sql = await benchDatabase(database);
  let postgresKey: string;
  let postgresIds: string[];
  try {
    await seedClusters(sql, shape, 1);
    postgresKey = await benchKey(sql);
    postgresIds = await detailIdsOf(sql);
  } finally {
    await sql.end();
  }

  console.log(
    `one cluster of ${pods} pods; ${load.connections} connections, ${load.seconds} s per path after ${load.warmupSeconds} s of warm-up`,
  );
  const serveAndMeasure = async (env: Record<string, string>, key: string, ids: string[]) => {
    const server = await serveBench(database, { ...SERVE_ENV, ...env });
    try {
      return await measureAll(server, key, listPaths(shape, ids), load);
    } finally {
      await server.stop();
    }
  };
  const onPostgres = await serveAndMeasure({}, postgresKey, postgresIds);
  // no DATABASE_URL: `cinv serve` hosts the embedded database in CINV_DATA_DIR
  const onPglite = await serveAndMeasure({ DATABASE_URL: '', CINV_DATA_DIR: EMBEDDED_DIR }, embeddedKey, embeddedIds);

  const figures: Figure[] = [];
  listPaths(shape, []).forEach((p, i) => {
    const pg = onPostgres[i]!;
    const lite = onPglite[i]!;
    console.log(
      `  ${p.label.padEnd(24)} PGlite ${lite.rps.toFixed(0).padStart(5)} req/s p99 ${lite.p99} ms | ` +
        `PostgreSQL ${pg.rps.toFixed(0).padStart(5)} req/s p99 ${pg.p99} ms`,
    );
    figures.push(
      { bench: 'embedded', path: `${p.label}: PGlite`, value: lite.rps, unit: 'req/s' },
      { bench: 'embedded', path: `${p.label}: PostgreSQL`, value: pg.rps, unit: 'req/s' },
      {
        bench: 'embedded',
        path: `${p.label}: PGlite ÷ PostgreSQL`,
        value: lite.rps / pg.rps,
        unit: 'ratio',
        target: 0.35,
        atLeast: true,
      },
    );
  });
  return figures;
}
