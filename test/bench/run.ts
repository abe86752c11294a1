import { benchCsvExport } from './csv-export.js';
import { benchReconcile } from './reconcile.js';
import { benchOutage, benchOverload } from './resilience.js';
import { benchSearch, benchStats } from './search.js';

const [name = 'reconcile', size] = process.argv.slice(2);
const benches: Record<string, () => Promise<void>> = {
  reconcile: () => benchReconcile(Number(size ?? 100_000)),
  csv: () => benchCsvExport(Number(size ?? 500_000)),
  outage: () => benchOutage(Number(size ?? 20)),
  overload: () => benchOverload(Number(size ?? 300)),
  search: () => benchSearch(Number(size ?? 5_000_000)),
  stats: () => benchStats(Number(size ?? 5_000_000)),
};
const bench = benches[name];
if (!bench) {
  console.error(`unknown benchmark "${name}"; available: ${Object.keys(benches).join(', ')}`);
  process.exit(2);
}
await bench();
