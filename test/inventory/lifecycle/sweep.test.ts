import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { Writable } from 'node:stream';
import { scheduleSweeps } from '../../../src/inventory/lifecycle/scheduler.js';
import { sweepLifecycle, trimOutbox, type LifecycleSettings } from '../../../src/inventory/lifecycle/sweep.js';
import { createLogger } from '../../../src/platform/observability/logger.js';
import { testConfig, testContext } from '../../support/app.js';
import { resetDatabase, testDatabase, testProbe } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const settings: LifecycleSettings = {
  inactiveAfterMs: 24 * HOUR,
  archiveInactiveAfterMs: 7 * DAY,
  archiveRetentionMs: 7 * DAY,
  batchSize: 2,
};
const T0 = Date.parse('2026-05-01T00:00:00Z');
const at = (ms: number) => new Date(T0 + ms);

const statuses = async (sql: Sql) =>
  Object.fromEntries(
    (await sql<{ name: string; status: string }[]>`select name, status from configuration_items order by name`).map(
      (r) => [r.name, r.status],
    ),
  );

describe('lifecycle sweep', () => {
  let sql: Sql;
  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
  });

  it('moves active → inactive → archived → removed on the configured thresholds, in batches', async () => {
    const pods = Array.from({ length: 5 }, (_, i) => buildPod({ name: `old-${i}` }));
    await ingest(sql, pods, { now: at(0) });
    await ingest(sql, [buildPod({ name: 'fresh' })], { now: at(20 * HOUR) });

    expect(await sweepLifecycle(sql, settings, at(23 * HOUR))).to.deep.equal({
      inactivated: 0,
      archived: 0,
      removed: 0,
    });
    expect(await sweepLifecycle(sql, settings, at(25 * HOUR))).to.deep.equal({
      inactivated: 5,
      archived: 0,
      removed: 0,
    });
    expect(await statuses(sql)).to.deep.include({ 'old-0': 'inactive', 'old-4': 'inactive', fresh: 'active' });
    const ciId = await ciIdOf(sql, 'pod/default/old-0');
    const [moved] = await sql`select status_updated_at from configuration_items where ci_id = ${ciId}`;
    expect(moved!.status_updated_at.toISOString()).to.equal(at(25 * HOUR).toISOString());

    // fresh goes inactive at 44h; old ones archive 7 days after they went inactive
    expect(await sweepLifecycle(sql, settings, at(25 * HOUR + 7 * DAY - 1))).to.deep.equal({
      inactivated: 1,
      archived: 0,
      removed: 0,
    });
    expect(await sweepLifecycle(sql, settings, at(25 * HOUR + 7 * DAY + 1))).to.deep.equal({
      inactivated: 0,
      archived: 5,
      removed: 0,
    });
    expect(await sweepLifecycle(sql, settings, at(25 * HOUR + 14 * DAY + 2))).to.deep.equal({
      inactivated: 0,
      archived: 1,
      removed: 5,
    });
    expect(await statuses(sql)).to.deep.equal({ fresh: 'archived' });

    const history = await sql`select change_type, changes from change_records where ci_id = ${ciId} order by id`;
    expect(history.map((h) => h.change_type)).to.deep.equal(['CREATED', 'UPDATED', 'UPDATED']);
    expect(history[1]!.changes).to.deep.equal([{ field: 'status', old_value: 'active', new_value: 'inactive' }]);
    expect(history[2]!.changes).to.deep.equal([{ field: 'status', old_value: 'inactive', new_value: 'archived' }]);
    expect(await sql`select 1 from ci_last_seen where ci_id = ${ciId}`).to.have.lengthOf(0);
    const outboxed = await sql`select count(*)::int as n from outbox`;
    expect(outboxed[0]!.n).to.equal(Number((await sql`select count(*)::int as n from change_records`)[0]!.n));
  });

  it('removes archived CIs after the retention even when archived by DELETE, keeping relationships and history', async () => {
    const node = { ...buildPod({ name: 'node' }), external_id: 'node/1', ci_type: 'k8s.node' };
    const pod = buildPod({ name: 'pod', relationships: [{ type: 'runs_on', target_external_id: 'node/1' }] });
    await ingest(sql, [pod, node], { now: at(0) });
    await ingest(sql, [], { mode: 'delta', deletions: ['node/1'], now: at(HOUR) });
    expect(await sweepLifecycle(sql, settings, at(HOUR + 7 * DAY + 1))).to.include({ removed: 1 });
    expect(await statuses(sql)).to.deep.equal({ pod: 'inactive' });
    expect(await sql`select 1 from relationships`).to.have.lengthOf(1);
    expect(await sql`select 1 from change_records where ci_name = 'node'`).to.have.lengthOf(2);
  });

  it('is reversed by a rediscovery before removal', async () => {
    const pod = buildPod({ name: 'back' });
    await ingest(sql, [pod], { now: at(0) });
    await sweepLifecycle(sql, settings, at(2 * DAY));
    await ingest(sql, [pod], { now: at(3 * DAY) });
    expect(await statuses(sql)).to.deep.equal({ back: 'active' });
    expect(await sweepLifecycle(sql, settings, at(3 * DAY + HOUR))).to.deep.equal({
      inactivated: 0,
      archived: 0,
      removed: 0,
    });
  });

  it('runs on its schedule and stops cleanly', async () => {
    await ingest(sql, [buildPod({ name: 'scheduled' })], { now: at(0) });
    const logs: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({ write: (chunk, _e, done) => (logs.push(String(chunk)), done()) }),
    );
    const config = testConfig({ sweepSchedule: '* * * * * *' });
    const context = testContext(await testDatabase(), await testProbe(), config, logger, { now: at(2 * DAY) });
    const jobs = scheduleSweeps(context);
    try {
      for (let waited = 0; waited < 5000 && (await statuses(sql)).scheduled === 'active'; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await jobs.stop();
    }
    expect(await statuses(sql)).to.deep.equal({ scheduled: 'inactive' });
    expect(logs.join('')).to.match(/lifecycle sweep done/);
  });

  it('trims outbox rows older than the given age when nothing consumes them', async () => {
    await ingest(sql, [buildPod(), buildPod(), buildPod()]);
    await sql`update outbox set created_at = now() - interval '2 days' where id in (select id from outbox order by id limit 2)`;
    expect(await trimOutbox(sql, DAY, 1, new Date())).to.equal(2);
    expect(await sql`select 1 from outbox`).to.have.lengthOf(1);
  });
});
