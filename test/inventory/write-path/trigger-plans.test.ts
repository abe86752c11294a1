import { expect } from 'chai';
import { onRealPostgres, testDatabase } from '../../support/db.js';

/** The tables a reconcile's transaction writes, directly or through triggers. */
const WRITE_PATH = [
  'configuration_items',
  'ci_last_seen',
  'change_records',
  'change_feed_pending',
  'relationships',
  'relationship_history',
  'pending_relationships',
  'ci_undo',
  'ci_versions',
  'outbox',
  'change_stats_queue',
];

/**
 * A reconcile plans its statements at every execution (lockSource), and PL/pgSQL follows the
 * transaction's setting unless the function sets its own: a per-row trigger without one plans its
 * statements again for every row it fires on (sql/0038_trigger_plans.sql).
 */
describe(`plans of the write path's triggers (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, () => {
  it('has every per-row trigger on the tables a reconcile writes keep its own plan cache mode', async () => {
    const { sql } = await testDatabase();
    const triggers = await sql<{ relname: string; tgname: string; config: string[] | null }[]>`
      select c.relname, t.tgname, p.proconfig as config
      from pg_trigger t
      join pg_class c on c.oid = t.tgrelid
      join pg_proc p on p.oid = t.tgfoid
      join pg_language l on l.oid = p.prolang
      where c.relname = any(${WRITE_PATH}) and c.relnamespace = current_schema()::regnamespace
        and t.tgparentid = 0 and (t.tgtype & 1) = 1 and l.lanname = 'plpgsql'
      order by 1, 2`;
    expect(triggers.map((t) => t.tgname)).to.include.members([
      'cinv_undo',
      'cinv_version_changed',
      'change_feed_at_commit',
    ]);
    for (const trigger of triggers) {
      expect(trigger.config ?? [], `${trigger.relname}.${trigger.tgname}`).to.include('plan_cache_mode=auto');
    }
  });
});
