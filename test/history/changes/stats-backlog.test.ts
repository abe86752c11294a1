import { expect } from 'chai';
import { Writable } from 'node:stream';
import { FOLD_BACKLOG, scheduleSearchJobs } from '../../../src/history/changes/scheduler.js';
import type { Sql } from '../../../src/platform/db/database.js';
import { recordChanges, type NewChangeRecord } from '../../../src/history/records/writer.js';
import { createLogger } from '../../../src/platform/observability/logger.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { testConfig, testContext } from '../../support/app.js';
import { resetDatabase, testDatabase, testProbe } from '../../support/db.js';

const queued = async (sql: Sql) =>
  Number((await sql<{ n: number }[]>`select count(*)::int as n from change_stats_queue`)[0]!.n);

function records(n: number, from: number): NewChangeRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    tenant_id: DEFAULT_TENANT_ID,
    ci_id: `00000000-0000-4000-8000-${(from + i).toString(16).padStart(12, '0')}`,
    source_id: null,
    scope_id: null,
    ci_name: `pod-${from + i}`,
    ci_namespace: 'default',
    ci_type: 'k8s.pod',
    change_type: 'UPDATED',
    changed_at: new Date(),
    changes: [{ field: 'raw_data.spec.replicas', old_value: 1, new_value: 2 }],
  }));
}

describe('statistics refresh on a backlog', () => {
  let sql: Sql;
  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
  });

  it('folds the queue before the schedule once a backlog waits, and leaves a smaller queue to the schedule', async () => {
    const logs: string[] = [];
    const logger = createLogger(
      'debug',
      new Writable({ write: (chunk, _e, done) => (logs.push(String(chunk)), done()) }),
    );
    // the schedule is a year away: only the run at start and the backlog can fold
    const config = testConfig({ statsRefreshSchedule: '0 0 1 1 *' });
    const context = testContext(await testDatabase(), await testProbe(), config, logger, { now: new Date() });
    const jobs = scheduleSearchJobs(context, { backlogCheckMs: 50 });
    try {
      for (let waited = 0; waited < 5000 && !logs.join('').includes('statistics refreshed'); waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      await sql.begin((tx) => recordChanges(tx, records(FOLD_BACKLOG - 1, 0)));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await queued(sql)).to.equal(FOLD_BACKLOG - 1);

      await sql.begin((tx) => recordChanges(tx, records(1, FOLD_BACKLOG)));
      for (let waited = 0; waited < 10_000 && (await queued(sql)) > 0; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await queued(sql)).to.equal(0);
    } finally {
      await jobs.stop();
    }
    const [folded] = await sql<{ n: string }[]>`select coalesce(sum(changes), 0)::text as n from change_stats_buckets`;
    expect(Number(folded!.n)).to.equal(FOLD_BACKLOG);
    expect(logs.join('')).to.match(
      /"reason":"backlog"[^\n]*statistics refreshed|statistics refreshed[^\n]*"reason":"backlog"/,
    );
  });
});
