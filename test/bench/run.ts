/**
 * The benchmark suite, against the machine's PostgreSQL (CINV_BENCH_SERVER_URL, default
 * postgres://postgres@127.0.0.1:5432): every benchmark generates its own data deterministically
 * into its own database (cinv_bench_<name>) and reports figures beside their targets.
 *
 *   npm run bench                  every scenario of the suite, then one table
 *   npm run bench -- NAME [SIZE]   one of them (or one of the extra ones below)
 */
import { printTable, type Figure } from './common.js';
import { benchAsOf } from './as-of.js';
import { benchChanges } from './changes.js';
import { benchCollectKubernetes } from './collect-kubernetes.js';
import { benchCollectNats } from './collect-nats.js';
import { benchCollectRabbitmq } from './collect-rabbitmq.js';
import { benchCsvExport } from './csv-export.js';
import { benchEmbedded } from './embedded.js';
import { benchGraph } from './graph.js';
import { benchHistoryScale } from './history-scale.js';
import { benchHistory } from './history.js';
import { benchIdentities } from './identities.js';
import { benchList } from './list.js';
import { benchNdjson } from './ndjson.js';
import { benchQuery } from './query.js';
import { benchQuality } from './quality.js';
import { benchRelationships } from './relationships.js';
import { benchReconcile } from './reconcile.js';
import { benchReconcileFloor } from './reconcile-floor.js';
import { benchOutage, benchOverload } from './resilience.js';
import { benchSearch, benchStats } from './search.js';
import { benchSoak } from './soak.js';
import { benchSubscriptions } from './subscriptions.js';
import { benchUi } from './ui.js';

type Bench = (size?: number, second?: number) => Promise<Figure[] | void>;

/** The suite `npm run bench` runs, in this order. */
const suite: Record<string, Bench> = {
  reconcile: (size) => benchReconcile(size),
  csv: (size) => benchCsvExport(size),
  list: (size) => benchList(size),
  changes: (size) => benchChanges(size),
  relationships: (size) => benchRelationships(size),
  embedded: (size) => benchEmbedded(size),
};
/** Longer or disruptive scenarios, run only by name. */
const extra: Record<string, Bench> = {
  outage: (size) => benchOutage(size ?? 20),
  overload: (size) => benchOverload(size ?? 300),
  soak: (size) => benchSoak(size),
  search: (size) => benchSearch(size ?? 5_000_000),
  stats: (size) => benchStats(size ?? 5_000_000),
  ndjson: (size) => benchNdjson(size ?? 500),
  'collect-kubernetes': (size) => benchCollectKubernetes(size ?? 10_000),
  'collect-nats': (size) => benchCollectNats(size ?? 1000),
  'collect-rabbitmq': (size) => benchCollectRabbitmq(size ?? 10_000),
  ui: (size) => benchUi(size),
  'history-scale': (size, second) => benchHistoryScale(size, second),
  'as-of': (size) => benchAsOf(size),
  graph: (size) => benchGraph(size),
  subscriptions: (size) => benchSubscriptions(size),
  'reconcile-floor': (size) => benchReconcileFloor(size),
  query: (size) => benchQuery(size),
  identities: (size) => benchIdentities(size),
  quality: (size) => benchQuality(size),
  history: (size) => benchHistory(size),
};

const [name, sizeText, secondText] = process.argv.slice(2);
const size = sizeText === undefined ? undefined : Number(sizeText);
const second = secondText === undefined ? undefined : Number(secondText);
const all = { ...suite, ...extra };
if (name !== undefined && !Object.hasOwn(all, name)) {
  console.error(
    `unknown benchmark "${name}"; the suite: ${Object.keys(suite).join(', ')}; by name only: ${Object.keys(extra).join(', ')}`,
  );
  process.exit(2);
}
const figures: Figure[] = [];
for (const [benchName, bench] of name === undefined ? Object.entries(suite) : [[name, all[name]!] as const]) {
  console.log(`\n== ${benchName}`);
  const started = performance.now();
  const reported = await bench(size, second);
  if (reported) {
    figures.push(...reported);
    for (const f of reported) console.log(`${f.path}: ${f.value} ${f.unit}`);
  }
  console.log(`(${benchName} took ${((performance.now() - started) / 1000).toFixed(0)} s)`);
}
if (figures.length > 0) {
  console.log('');
  printTable(figures);
}
process.exit(0);
