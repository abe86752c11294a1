import { expect } from 'chai';
import postgres from 'postgres';
import { listMigrations, migrate } from '../../../src/platform/db/migrate.js';
import { runCli } from '../../support/cli.js';
import { onRealPostgres, testDatabase } from '../../support/db.js';
import { createScratchDatabase } from '../../support/scratch-db.js';

describe('migrations', () => {
  it('are numbered, applied once, and leave the default tenant', async () => {
    const { sql } = await testDatabase();
    const files = await listMigrations();
    expect(files.map((m) => m.version)).to.deep.equal([...files.map((m) => m.version)].sort((a, b) => a - b));
    expect(await migrate(sql)).to.deep.equal([]);
    const applied = await sql<{ version: number }[]>`select version from schema_migrations order by version`;
    expect(applied.map((r) => r.version)).to.deep.equal(files.map((m) => m.version));
    expect(await sql`select slug from tenants where slug = 'default'`).to.have.lengthOf(1);
  });

  it('give every table a primary key and every tenant-owned table a tenant_id', async () => {
    const { sql } = await testDatabase();
    const withoutKey = await sql`
      select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind = 'r' and n.nspname = current_schema()
        and not exists (select 1 from pg_constraint k where k.conrelid = c.oid and k.contype = 'p')`;
    expect(withoutKey).to.deep.equal([]);
    const tenantOwned = [
      'configuration_items',
      'change_records',
      'relationships',
      'outbox',
      'api_keys',
      'sources',
      'collectors',
      'ci_last_seen',
    ];
    const columns = await sql<{ table_name: string }[]>`
      select table_name from information_schema.columns
      where column_name = 'tenant_id' and table_schema = current_schema() and table_name = any(${tenantOwned}::text[])`;
    expect(columns.map((c) => c.table_name)).to.have.members(tenantOwned);
  });

  (onRealPostgres ? describe : describe.skip)(
    'concurrent start (skipped on the embedded database: PGlite has a single session)',
    () => {
      it('lets two processes migrate one database at once without racing', async function () {
        this.timeout(120_000);
        const scratch = await createScratchDatabase('cinv_migrate');
        try {
          const env = { DATABASE_URL: scratch.url, CINV_SECRET: 'migrate-test-secret-migrate-test-secret-1' };
          const [first, second] = await Promise.all([runCli(['migrate'], env), runCli(['migrate'], env)]);
          expect(first.code, first.stderr).to.equal(0);
          expect(second.code, second.stderr).to.equal(0);
          const outputs = [first.stdout, second.stdout].sort();
          expect(outputs[0]).to.match(/^applied migrations: 1/);
          expect(outputs[1]).to.match(/schema is up to date/);
          const applying = [first, second].find((run) => run.stdout.startsWith('applied migrations'))!;
          const count = (await listMigrations()).length;
          expect(applying.stderr).to.match(new RegExp(`migrations ${count}/${count} \\(100\\.0%\\)`));
          const sql = postgres(scratch.url, { max: 1 });
          try {
            const versions = await sql`select version from schema_migrations`;
            expect(versions.length).to.equal((await listMigrations()).length);
            expect(await sql`select 1 from tenants`).to.have.lengthOf(1);
          } finally {
            await sql.end();
          }
        } finally {
          await scratch.drop();
        }
      });
    },
  );
});
