// Mocha's spec output, closed by one line the CI reads: `tests: N passed, N failed, N skipped`.
// Before it, the slowest test files (hooks included), so a suite that grows slow says where, and
// one `failed:` line per failure, so the end of a long log names what failed. With
// CINV_TEST_TIMINGS=FILE it also appends every file's duration there (`<ms>\t<file>`, one a line),
// what .ci/split.mjs balances parallel runs by.
const Mocha = require('mocha');
const path = require('node:path');
const process = require('node:process');
const fs = require('node:fs');

const SLOWEST = 12;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const started = new Map();
    const spent = new Map();
    const failed = [];
    runner.on('fail', (test, err) => {
      const file = test.file ? path.relative(process.cwd(), test.file) : '?';
      const reason = String(err?.message ?? err)
        .split('\n')[0]
        .slice(0, 200);
      failed.push(`failed: ${file}: ${test.fullTitle()}: ${reason}`);
    });
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
      if (process.env.CINV_TEST_TIMINGS) {
        const lines = [...spent].map(([file, ms]) => `${Math.round(ms)}\t${path.relative(process.cwd(), file)}\n`);
        fs.appendFileSync(process.env.CINV_TEST_TIMINGS, lines.join(''));
      }
      for (const line of failed) console.log(line);
      const { passes, failures, pending } = runner.stats;
      console.log(`tests: ${passes} passed, ${failures} failed, ${pending} skipped`);
    });
  }
}

module.exports = SummaryReporter;
