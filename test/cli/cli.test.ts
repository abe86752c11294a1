import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateApiKey } from '../../src/platform/auth/api-key-format.js';
import { runCli, runCliOnTerminal, startServer, stopServer, useCliEnvironment } from '../support/cli.js';
import { onRealPostgres } from '../support/db.js';
import { buildPod } from '../support/factories.js';
import { startFakeOpenSearch } from '../support/fake-opensearch/index.js';

describe(`cinv command line (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(180_000);
  // on the real server the CLI gets its own database; embedded, its own data directory
  const env = useCliEnvironment('cinv_cli');

  it('creates keys and ingests before any server ran, then serves them; commands join a running server', async () => {
    const admin = await runCli(['keys', 'create', '--tier', 'adm', '--name', 'ops'], env());
    expect(admin.code, admin.stderr).to.equal(0);
    const adminKey = admin.stdout.trim();
    expect(adminKey).to.match(/^cinv_adm_[0-9A-Za-z]{36}$/);
    expect(admin.stderr).to.match(/shown once/);

    const snapshot = path.join(env().CINV_DATA_DIR!, 'snapshot.json');
    writeFileSync(
      snapshot,
      JSON.stringify({ scope_id: 'cluster-1', items: [buildPod({ name: 'cli-1' }), buildPod({ name: 'cli-2' })] }),
    );
    const ingested = await runCli(['ingest', '--source', 'demo', '--file', snapshot], env());
    expect(ingested.code, ingested.stderr).to.equal(0);
    expect(JSON.parse(ingested.stdout)).to.deep.include({ received: 2, created: 2, changes: 2 });
    expect(JSON.parse(ingested.stdout).source.id).to.be.a('number');
    // not a terminal: the progress ends with a plain line
    expect(ingested.stderr).to.match(/ingest \S*snapshot\.json 2\/2 \(100\.0%\)/);
    // the JSON is the one JSON.stringify writes, nothing spaced otherwise
    expect(ingested.stdout).to.equal(`${JSON.stringify(JSON.parse(ingested.stdout), null, 2)}\n`);

    // on a terminal, a summary for a person; --json there gives the JSON
    const summary = await runCliOnTerminal(['ingest', '--source', 'demo', '--file', snapshot], env());
    expect(summary.code, summary.stdout).to.equal(0);
    expect(summary.stdout).to.match(
      /^ingested 2 items into source demo \(id \d+\): 0 created, 0 updated, 2 unchanged, 0 reactivated, 0 archived\nchange records: 0\nrelationships: 0 written, 0 removed, 0 unresolved/m,
    );
    expect(summary.stdout).to.not.include('"received"');
    const json = await runCliOnTerminal(['ingest', '--source', 'demo', '--file', snapshot, '--json'], env());
    expect(json.code, json.stdout).to.equal(0);
    const printed = json.stdout.slice(json.stdout.indexOf('{\n  "source"'), json.stdout.lastIndexOf('}') + 1);
    expect(JSON.parse(printed)).to.deep.include({ received: 2, created: 0, unchanged: 2 });
    expect(printed).to.equal(JSON.stringify(JSON.parse(printed), null, 2));

    const scoped = await runCli(
      [
        'keys',
        'create',
        '--tier',
        'svc',
        '--name',
        'scoped',
        '--scope',
        'demo:cluster-2',
        '--permission',
        'configuration_items:read',
      ],
      env(),
    );
    expect(scoped.code, scoped.stderr).to.equal(0);

    const bootstrap = generateApiKey('adm');
    const server = await startServer({ ...env(), CINV_BOOTSTRAP_ADMIN_KEY: bootstrap });
    try {
      const get = (key: string) =>
        fetch(`http://127.0.0.1:${server.port}/api/v1/configuration-items`, { headers: { 'x-api-key': key } }).then(
          async (r) => ({
            status: r.status,
            body: (await r.json()) as { total: number },
          }),
        );
      expect((await get(adminKey)).body.total).to.equal(2);
      expect((await get(bootstrap)).body.total).to.equal(2);
      // the source shows the command line's pushes as it shows the API's: not 'no push yet'
      const sources = (await (
        await fetch(`http://127.0.0.1:${server.port}/api/v1/sources`, { headers: { 'x-api-key': adminKey } })
      ).json()) as {
        items: {
          name: string;
          last_collection: string | null;
          health_status: { status: string; details: { message: string } } | null;
        }[];
      };
      const demo = sources.items.find((source) => source.name === 'demo')!;
      expect(demo.last_collection).to.be.a('string');
      expect(demo.health_status?.status).to.equal('healthy');
      expect(demo.health_status?.details.message).to.match(/^push accepted: 2 received/);
      expect(await get(scoped.stdout.trim())).to.deep.equal({
        status: 200,
        body: { items: [], total: 0, total_exact: true, offset: 0, limit: 50, has_more: false, next_cursor: null },
      });

      const live = await runCli(['keys', 'create', '--tier', 'ro', '--name', 'while-serving'], env());
      expect(live.code, live.stderr).to.equal(0);
      expect((await get(live.stdout.trim())).status).to.equal(200);
      expect(server.output()).to.not.include(adminKey);
      expect(server.output()).to.not.include(bootstrap);
      // the commands made the months they wrote into, so the server found nothing out of place
      expect(server.output()).to.not.include('outside the monthly partitions');
      // a Node.js past its end of life is named at start; a supported one is not
      const supported = Number(process.versions.node.split('.')[0]) >= 22;
      expect(server.output().includes('is not supported (past its end of life)'), process.versions.node).to.equal(
        !supported,
      );
    } finally {
      expect(await stopServer(server.child)).to.equal(0);
    }
  });

  it('lists keys without their secrets and revokes them, both audited', async () => {
    const created = await runCli(['keys', 'create', '--tier', 'ro', '--name', 'to-revoke'], env());
    expect(created.code, created.stderr).to.equal(0);
    const key = created.stdout.trim();
    const id = /\(id ([0-9a-f-]{36})\)/.exec(created.stderr)![1]!;
    const listed = await runCli(['keys', 'list'], env());
    expect(listed.code, listed.stderr).to.equal(0);
    const row = listed.stdout.split('\n').find((line) => line.startsWith(id))!;
    expect(row).to.match(new RegExp(`^${id}\\s+ro\\s+to-revoke\\s+…${key.slice(-4)}\\s`));
    expect(row).to.match(/\sactive$/);
    expect(listed.stdout).to.not.include(key);

    const revoked = await runCli(['keys', 'revoke', id], env());
    expect(revoked.code, revoked.stderr).to.equal(0);
    expect(revoked.stderr).to.match(/revoked ro key "to-revoke"/);
    expect((await runCli(['keys', 'list'], env())).stdout).to.not.include(id);
    const all = await runCli(['keys', 'list', '--include-revoked'], env());
    expect(all.stdout.split('\n').find((line) => line.startsWith(id))).to.match(/\srevoked$/);
    expect((await runCli(['keys', 'revoke', 'not-an-id'], env())).code).to.equal(2);
  });

  it('explains usage mistakes with exit code 2', async () => {
    const badTier = await runCli(['keys', 'create', '--tier', 'root', '--name', 'x'], env());
    expect(badTier.code).to.equal(2);
    expect(badTier.stderr).to.match(/--tier must be adm, svc or ro/);
    const badScope = await runCli(['keys', 'create', '--tier', 'adm', '--name', 'x', '--scope', 'demo'], env());
    expect(badScope.code).to.equal(2);
    expect(badScope.stderr).to.match(/adm keys hold everything/);
    const roPermission = await runCli(
      ['keys', 'create', '--tier', 'ro', '--name', 'x', '--permission', 'changes:read'],
      env(),
    );
    expect(roPermission.code).to.equal(2);
    expect(roPermission.stderr).to.match(/svc keys only/);
    const badPermission = await runCli(
      ['keys', 'create', '--tier', 'svc', '--name', 'x', '--permission', 'everything'],
      env(),
    );
    expect(badPermission.stderr).to.match(/RESOURCE:ACTION/);
    const unknown = await runCli(['frobnicate'], env());
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.match(/unknown command/);
    const badEnv = await runCli(['migrate'], { ...env(), CINV_INACTIVE_AFTER: 'soon' });
    expect(badEnv.code).to.equal(2);
    expect(badEnv.stderr).to.match(/CINV_INACTIVE_AFTER/);
    const help = await runCli(['--help'], env());
    expect(help.code).to.equal(0);
    expect(help.stdout).to.match(/keys create --tier adm\|svc\|ro/);
  });

  it('refreshes statistics, shows the outbox, and refuses the OpenSearch commands without OPENSEARCH_URL', async () => {
    const refreshed = await runCli(['refresh-stats'], env());
    expect(refreshed.code, refreshed.stderr).to.equal(0);
    expect(JSON.parse(refreshed.stdout)).to.include({ refreshed: true });
    const outbox = await runCli(['outbox'], env());
    expect(outbox.code, outbox.stderr).to.equal(0);
    expect(outbox.stdout).to.match(/^pending: \d+\nlag: [\d.]+ s .*\nparked: 0\n/);
    expect(outbox.stdout).to.match(/OPENSEARCH_URL is not set/);
    for (const command of [['reindex'], ['indexer']]) {
      const refused = await runCli(command, env());
      expect(refused.code, command.join(' ')).to.equal(2);
      expect(refused.stderr).to.match(/set OPENSEARCH_URL/);
    }
    const help = await runCli(['--help'], env());
    for (const command of ['indexer', 'reindex [--resume] [--delete-old]', 'outbox retry', 'refresh-stats'])
      expect(help.stdout).to.include(command);
  });

  it('recounts data quality: every CI checked again, the counters equal to a count from the rows', async () => {
    const snapshot = path.join(env().CINV_DATA_DIR!, 'quality.json');
    writeFileSync(snapshot, JSON.stringify({ items: [buildPod({ name: 'q-1' }), buildPod({ name: 'q-2' })] }));
    expect((await runCli(['ingest', '--source', 'quality', '--file', snapshot], env())).code).to.equal(0);
    const recount = await runCli(['quality', 'recount', '--tenant', 'default'], env());
    expect(recount.code, recount.stderr).to.equal(0);
    const report = JSON.parse(recount.stdout.trim().split('\n')[0]!) as {
      tenant: string;
      checked: number;
      differences: [];
    };
    expect(report.tenant).to.equal('default');
    expect(report.checked).to.be.at.least(2);
    expect(report.differences).to.deep.equal([]);
    const refused = await runCli(['quality', 'recount', '--fix', '--frobnicate'], env());
    expect(refused.code).to.equal(2);
  });

  it('reindexes into the fake OpenSearch server (a test double) from the command line, with progress lines', async () => {
    const fake = await startFakeOpenSearch();
    try {
      const reindexed = await runCli(['reindex', '--batch-size', '1'], { ...env(), OPENSEARCH_URL: fake.url });
      expect(reindexed.code, reindexed.stderr).to.equal(0);
      expect(reindexed.stdout).to.match(
        /^cinv-changes now points at cinv-changes-v1-\S+: (\d+) documents indexed, \1 verified against PostgreSQL/,
      );
      // not a terminal: the progress ends with a plain line
      expect(reindexed.stderr).to.match(/reindex cinv-changes-v1-\S+ (\d+)\/\1 \(100\.0%\)/);
      const [index] = Object.keys(fake.aliases()).length > 0 ? fake.aliases()['cinv-changes']! : [];
      expect(fake.documents(index!).size).to.be.greaterThan(0);
    } finally {
      await fake.close();
    }
  });
});
