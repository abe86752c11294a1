import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';
import { planNodes } from '../../support/plans.js';

/** The indexes a statement's plan reads. */
const indexesOf = async (sql: Sql, statement: string, parameters: string[]): Promise<string[]> =>
  (await planNodes(sql, statement, parameters)).flatMap((node) =>
    node['Index Name'] === undefined ? [] : [node['Index Name']],
  );

describe("finding a source's CIs by external id", () => {
  let sql: Sql;

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
  });

  it('goes through the identity index for a source the statistics do not know yet, and instance reads through the instance index', async () => {
    // statistics that know one source: a new one looks to the planner as if it held a row or two
    await ingest(
      sql,
      [1, 2, 3].map((n) => buildPod({ name: `known-${n}` })),
      { source: 'known', scopeId: 'eu' },
    );
    await sql`analyze configuration_items`;
    const sourceId = await buildSource(sql, 'loading');
    await sql`
      insert into configuration_items (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, status, raw_data, type_data, content_hash, created_at, updated_at)
      select gen_random_uuid(), ${DEFAULT_TENANT_ID}, ${sourceId}, 'eu', 'pod/loading/' || n, 'k8s.pod', 'p' || n, 'active', '{}', '{}', '\\x00', now(), now()
      from generate_series(1, 3000) as n`;
    const probe =
      'select ci_id, scope_id from configuration_items where tenant_id = $1 and source_id = $2 and external_id = $3';
    expect(await indexesOf(sql, probe, [DEFAULT_TENANT_ID, sourceId, 'pod/loading/7'])).to.deep.equal(['ci_identity']);
    const instance =
      'select count(*) from configuration_items where tenant_id = $1 and source_id = $2 and scope_id = $3';
    expect(await indexesOf(sql, instance, [DEFAULT_TENANT_ID, sourceId, 'us'])).to.deep.equal(['ci_by_instance']);
  });
});
