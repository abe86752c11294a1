/**
 * Identity reads through `cinv serve` at 1 000 000 CIs (test/bench/identities-seed.ts: 3 000
 * machines seen ten times each by ten sources, 300 open conflicts; kept in cinv_bench_identities
 * between runs):
 *
 *   npm run bench -- identities [requests]     (default 200 sequential requests per path)
 *
 * Targets (p95 of sequential requests): an identity's detail with its 10 observations ≤ 50 ms;
 * the identity list's first page and a page deep into its cursor walk ≤ 100 ms; the review queue
 * (open conflicts) ≤ 100 ms.
 */
import { benchDatabase, benchKey, serveBench, type Figure, type RunningServer } from './common.js';
import { SERVE_ENV } from './list.js';
import { CONFLICTS, HOSTS, seedIdentities } from './identities-seed.js';

const DATABASE = 'cinv_bench_identities';

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

export async function benchIdentities(requests = 200): Promise<Figure[]> {
  const sql = await benchDatabase(DATABASE);
  let server: RunningServer | undefined;
  const figures: Figure[] = [];
  try {
    await seedIdentities(sql);
    // identities of ten observations and none in a conflict, spread over the machines
    const detailed = await sql<{ id: string }[]>`
      select i.id from identities i
      where i.retired_at is null and i.observation_count = 10
        and not exists (select 1 from identity_observations o join identity_conflicts k on k.status = 'open' and o.ci_id = any(k.ci_ids)
                        where o.identity_id = i.id)
      order by md5(i.id::text) limit 50`;
    const [counted] = await sql<{ identities: number; conflicts: number }[]>`
      select (select count(*)::int from identities where retired_at is null) as identities,
             (select count(*)::int from identity_conflicts where status = 'open') as conflicts`;
    console.log(
      `  ${counted!.identities} identities (${HOSTS} machines seen 10 times, ${CONFLICTS} nodes held apart), ${counted!.conflicts} open conflicts`,
    );
    if (detailed.length === 0) throw new Error('no identity of 10 observations: the seeding is not as expected');
    const key = await benchKey(sql);
    server = await serveBench(DATABASE, SERVE_ENV);
    const base = server.base;
    const get = async (path: string) => {
      const reply = await fetch(base + path, { headers: { 'x-api-key': key } });
      const body: any = await reply.json();
      if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${JSON.stringify(body)}`);
      return body;
    };
    const timed = async (
      label: string,
      pathOf: (i: number) => string,
      target: number,
      check: (body: any) => string,
    ) => {
      const ms: number[] = [];
      let said = '';
      // the first ten warm the server's and the database's caches
      for (let i = 0; i < requests + 10; i++) {
        const started = performance.now();
        const body = await get(pathOf(i));
        if (i >= 10) ms.push(performance.now() - started);
        said = check(body);
      }
      const p95 = percentile(ms, 95);
      console.log(
        `  ${label.padEnd(58)} p50 ${percentile(ms, 50).toFixed(1).padStart(6)} ms  p95 ${p95.toFixed(1).padStart(6)} ms  (target ${target}; ${said})`,
      );
      figures.push({ bench: 'identities', path: label, value: Math.round(p95 * 10) / 10, unit: 'ms p95', target });
    };
    await timed(
      'identity detail, 10 observations',
      (i) => `/api/v1/identities/${detailed[i % detailed.length]!.id}`,
      50,
      (body: { observations: unknown[]; relationships: unknown[]; changes: unknown[] }) =>
        `${body.observations.length} observations, ${body.relationships.length} relationships, ${body.changes.length} changes`,
    );
    await timed(
      'identity list, first page of 50',
      () => '/api/v1/identities?limit=50',
      100,
      (body: { items: [] }) => {
        return `${body.items.length} identities`;
      },
    );
    // a cursor 50 pages into the walk (of 66)
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const body: { next_cursor: string | null } = await get(
        `/api/v1/identities?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      cursor = body.next_cursor;
    }
    if (!cursor) throw new Error('the identity list ended before 50 pages');
    await timed(
      'identity list, page 51 by cursor',
      () => `/api/v1/identities?limit=50&cursor=${encodeURIComponent(cursor)}`,
      100,
      (body: { items: [] }) => `${body.items.length} identities`,
    );
    await timed(
      'review queue: open conflicts, first page',
      () => '/api/v1/identities/conflicts',
      100,
      (body: { items: { groups: unknown[][] }[] }) =>
        `${body.items.length} conflicts of ${body.items[0]?.groups.map((g) => g.length).join('+')} observations`,
    );
    return figures;
  } finally {
    await server?.stop();
    await sql.end();
  }
}
