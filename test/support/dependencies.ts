import { spawnSync } from 'node:child_process';

/**
 * Whether something listens at a URL's host and port, decided before the suites are declared so
 * that a suite can be skipped by name. A short-lived child does the connecting: the check has to be
 * synchronous.
 */
export function listening(url: string, defaultPort: number): boolean {
  const parsed = new URL(url);
  const script = `require('node:net').connect(${Number(parsed.port || defaultPort)}, ${JSON.stringify(parsed.hostname)})
    .on('connect', () => process.exit(0)).on('error', () => process.exit(1))`;
  return spawnSync(process.execPath, ['-e', script], { timeout: 3000 }).status === 0;
}

/**
 * `describe` when the suite's dependency is present, or under CI=true (where a missing dependency
 * must fail the suite, not skip it); `describe.skip` otherwise. The suite's name says why.
 */
export const describeWith = (present: boolean): Mocha.SuiteFunction | Mocha.PendingSuiteFunction =>
  present || process.env.CI === 'true' ? describe : describe.skip;
