import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { onRealPostgres, otherProcessConnection, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

const NO_TENANT = '00000000-0000-4000-8000-0000000000ff';
const NO_CI = '00000000-0000-4000-8000-0000000000ee';

/** The SQLSTATE a statement fails with, or undefined when it succeeds. */
async function failureOf(statement: Promise<unknown>): Promise<string | undefined> {
  try {
    await statement;
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

describe("the inventory tables' references, checked per statement", () => {
  let sql: Sql;
  let sourceId: string;
  let ciId: string;

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    ({ sourceId } = await ingest(sql, [buildPod({ name: 'kept' }), buildPod({ name: 'purged' })]));
    ciId = await ciIdOf(sql, buildPod({ name: 'kept' }).external_id);
  });

  const insertCi = (tenantId: string, source: string, name: string) => sql`
    insert into configuration_items (ci_id, tenant_id, source_id, external_id, ci_type, name, status, raw_data, type_data, content_hash, created_at, updated_at)
    select gen_random_uuid(), ${tenantId}, ${source}, 'pod/x/' || n, 'k8s.pod', ${name}, 'active', '{}', '{}', '\\x00', now(), now()
    from generate_series(1, 3) as n`;

  it('refuses CIs of a tenant or a source that does not exist, as the foreign keys did, and keeps nothing of the statement', async () => {
    expect(await failureOf(insertCi(NO_TENANT, sourceId, 'orphan'))).to.equal('23503');
    expect(await failureOf(insertCi(DEFAULT_TENANT_ID, '999999', 'orphan'))).to.equal('23503');
    expect(await failureOf(sql`update configuration_items set source_id = 999999 where ci_id = ${ciId}`)).to.equal(
      '23503',
    );
    expect(await sql`select 1 from configuration_items where name = 'orphan'`).to.have.length(0);
    const [ci] = await sql`select source_id::text from configuration_items where ci_id = ${ciId}`;
    expect(ci!.source_id).to.equal(sourceId);
  });

  it('refuses a last-seen row, a change record or a relationship that points nowhere', async () => {
    expect(
      await failureOf(sql`
        insert into ci_last_seen (ci_id, tenant_id, last_seen) values (${NO_CI}, ${DEFAULT_TENANT_ID}, now())
        on conflict (ci_id) do update set last_seen = excluded.last_seen`),
    ).to.equal('23503');
    expect(
      await failureOf(sql`
        insert into change_records (tenant_id, ci_id, source_id, ci_name, ci_type, change_type, changed_at)
        values (${NO_TENANT}, ${ciId}, ${sourceId}, 'kept', 'k8s.pod', 'UPDATED', now())`),
    ).to.equal('23503');
    expect(
      await failureOf(sql`
        insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen)
        values (${NO_TENANT}, ${sourceId}, ${ciId}, ${ciId}, 'runs_on', now(), now())`),
    ).to.equal('23503');
    expect(await failureOf(sql`update change_records set tenant_id = ${NO_TENANT} where ci_id = ${ciId}`)).to.equal(
      '23503',
    );
    // a statement whose rows all point somewhere passes
    expect(
      await failureOf(
        sql`insert into ci_last_seen (ci_id, tenant_id, last_seen) values (${ciId}, ${DEFAULT_TENANT_ID}, now()) on conflict (ci_id) do update set last_seen = excluded.last_seen`,
      ),
    ).to.equal(undefined);
  });

  it('removes the last-seen rows of deleted CIs, and refuses to delete a source or tenant that still has CIs', async () => {
    const purged = await ciIdOf(sql, buildPod({ name: 'purged' }).external_id);
    expect(await sql`select 1 from ci_last_seen where ci_id = ${purged}`).to.have.length(1);
    await sql`delete from configuration_items where ci_id = ${purged}`;
    expect(await sql`select 1 from ci_last_seen where ci_id = ${purged}`).to.have.length(0);
    expect(await sql`select 1 from ci_last_seen where ci_id = ${ciId}`).to.have.length(1);
    expect(await failureOf(sql`delete from sources where id = ${sourceId}`)).to.equal('23503');
    expect(await failureOf(sql`delete from tenants where id = ${DEFAULT_TENANT_ID}`)).to.equal('23503');
    expect(await sql`select 1 from sources where id = ${sourceId}`).to.have.length(1);
  });

  it('lets the other columns of a referenced tenant or source change', async () => {
    await sql`update sources set name = 'renamed' where id = ${sourceId}`;
    expect((await sql`select name from sources where id = ${sourceId}`)[0]!.name).to.equal('renamed');
    await sql`update tenants set name = 'renamed tenant' where id = ${DEFAULT_TENANT_ID}`;
    expect((await sql`select name from tenants where id = ${DEFAULT_TENANT_ID}`)[0]!.name).to.equal('renamed tenant');
  });

  (onRealPostgres ? describe : describe.skip)(
    'beside a concurrent writer (skipped on the embedded database: PGlite has one session)',
    () => {
      it('makes a delete of a source wait for an insert that refers to it, then refuses it', async () => {
        const { sourceId: other } = await ingest(sql, [], { source: 'deleted-while-written' });
        const deleter = await otherProcessConnection();
        try {
          let deleted: Promise<string | undefined> | undefined;
          await sql.begin(async (tx) => {
            await tx`
            insert into configuration_items (ci_id, tenant_id, source_id, external_id, ci_type, name, status, raw_data, type_data, content_hash, created_at, updated_at)
            values (gen_random_uuid(), ${DEFAULT_TENANT_ID}, ${other}, 'pod/x/late', 'k8s.pod', 'late', 'active', '{}', '{}', '\\x00', now(), now())`;
            deleted = failureOf(deleter`delete from sources where id = ${other}`);
            // the delete waits on the insert's lock of the source (a new connection first connects)
            let seen = 0;
            for (let tries = 0; tries < 50 && seen === 0; tries++) {
              await new Promise((resolve) => setTimeout(resolve, 100));
              // the activity view is read once per transaction unless its snapshot is cleared
              await tx`select pg_stat_clear_snapshot()`;
              seen = (
                await tx`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like 'delete from sources%'`
              )[0]!.n as number;
            }
            expect(seen).to.equal(1);
          });
          expect(await deleted).to.equal('23503');
          expect(await sql`select 1 from configuration_items where source_id = ${other}`).to.have.length(1);
        } finally {
          await deleter.end();
        }
      });
    },
  );
});
