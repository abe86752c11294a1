// Mocha's spec output, closed by one line the CI reads: `tests: N passed, N failed, N skipped`.
// Before it, the slowest test files (hooks included), so a suite that grows slow says where.
const Mocha = require('mocha');
const path = require('node:path');
const process = require('node:process');

const SLOWEST = 12;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const started = new Map();
    const spent = new Map();
    runner.on('suite', (suite) => {
      if (suite.file && suite.parent?.root) started.set(suite, process.hrtime.bigint());
    });
    runner.on('suite end', (suite) => {
      const from = started.get(suite);
      if (from === undefined) return;
      const ms = Number(process.hrtime.bigint() - from) / 1e6;
      spent.set(suite.file, (spent.get(suite.file) ?? 0) + ms);
    });
    runner.once('end', () => {
      const slowest = [...spent].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
      if (slowest.length > 1) {
        console.log('slowest files:');
        for (const [file, ms] of slowest) {
          console.log(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}`);
        }
      }
      const { passes, failures, pending } = runner.stats;
      console.log(`tests: ${passes} passed, ${failures} failed, ${pending} skipped`);
    });
  }
}

module.exports = SummaryReporter;
