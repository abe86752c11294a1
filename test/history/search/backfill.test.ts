import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { backfillSearchDocuments } from '../../../src/history/search/backfill.js';
import { documentTokens, toTsvectorText } from '../../../src/history/records/document.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

describe('search document backfill', () => {
  let sql: Sql;
  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
  });

  it('gives every record without a document the one the writer would have given it, in batches across id lengths', async () => {
    // records written before documents were stored: ids 1 to 1500 cross three digit lengths
    await sql`
      insert into change_records (tenant_id, ci_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
      select ${DEFAULT_TENANT_ID}, md5(i::text)::uuid, 'host-' || i || '.example', 'ns', 'k8s.node', 'UPDATED', now(),
             jsonb_build_array(jsonb_build_object('field', 'raw_data.spec.image', 'old_value', 'nginx:1.' || i, 'new_value', 'nginx:2.' || i)),
             array['raw_data.spec.image']
      from generate_series(1, 1500) as i`;
    const batches: number[] = [];
    expect(await backfillSearchDocuments(sql, 100, (done) => batches.push(done))).to.equal(1500);
    expect(batches).to.have.lengthOf(15);
    expect(await sql`select 1 from change_records where search_vector is null`).to.have.lengthOf(0);
    const [row] = await sql<{ ci_name: string; doc: string; expected: string }[]>`
      select ci_name, search_vector::text as doc, changes from change_records where ci_name = 'host-1000.example'`;
    const [expected] = await sql<{ doc: string }[]>`select ${toTsvectorText(
      documentTokens({
        ci_name: 'host-1000.example',
        ci_namespace: 'ns',
        ci_type: 'k8s.node',
        changes: [{ field: 'raw_data.spec.image', old_value: 'nginx:1.1000', new_value: 'nginx:2.1000' }],
      }),
    )}::tsvector::text as doc`;
    expect(row!.doc).to.equal(expected!.doc);
    // nothing left to do the second time
    expect(await backfillSearchDocuments(sql, 100)).to.equal(0);
  });
});
