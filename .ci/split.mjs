// Splits the whole suite (every test/**/*.test.ts, the files `npm test` runs) into N shards of about
// equal duration, for runs side by side: each shard is a mocha process of its own, with its own
// database. Durations come from a file of `<ms>\t<file>` lines (what the summary reporter writes
// under CINV_TEST_TIMINGS); a file it does not know counts as the median. Prints one shard a line,
// its files separated by spaces, in the order `npm test` runs them. `weigh` prints the expected
// milliseconds of the given files instead, which .ci/run starts its longest parts first by.
//
//   node .ci/split.mjs SHARDS [TIMINGS]
//   node .ci/split.mjs weigh TIMINGS FILE...
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const [shardsArgument, timingsFile, ...weighed] = process.argv.slice(2);
const shards = Number(shardsArgument);
if (shardsArgument === 'weigh' ? !timingsFile : !Number.isInteger(shards) || shards < 1) {
  console.error('usage: node .ci/split.mjs SHARDS [TIMINGS] | weigh TIMINGS FILE...');
  process.exit(2);
}

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith('.'))
    .flatMap((entry) => {
      const file = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) return testFiles(file);
      return entry.name.endsWith('.test.ts') ? [file] : [];
    });
}

function durations(file) {
  const known = new Map();
  if (!file || !existsSync(file)) return known;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [ms, name] = line.split('\t');
    if (name && Number.isFinite(Number(ms))) known.set(name.trim(), Number(ms));
  }
  return known;
}

function median(values) {
  if (values.length === 0) return 1;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const files = testFiles('test').sort();
const known = durations(timingsFile);
const fallback = median(files.filter((file) => known.has(file)).map((file) => known.get(file)));
const weight = (file) => known.get(file) ?? fallback;
if (shardsArgument === 'weigh') {
  console.log(Math.round(weighed.reduce((sum, file) => sum + weight(path.posix.normalize(file)), 0)));
  process.exit(0);
}

// longest first, each onto the shard that has the least so far
const loads = Array.from({ length: shards }, () => ({ total: 0, files: [] }));
for (const file of [...files].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
  const lightest = loads.reduce((least, shard) => (shard.total < least.total ? shard : least));
  lightest.total += weight(file);
  lightest.files.push(file);
}
for (const shard of loads) console.log(shard.files.sort().join(' '));
