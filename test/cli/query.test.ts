import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCli, runCliOnTerminal, useCliEnvironment } from '../support/cli.js';
import { onRealPostgres } from '../support/db.js';
import { buildPod } from '../support/factories.js';

describe(`cinv query (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(180_000);
  const env = useCliEnvironment('cinv_cli_query');

  before(async () => {
    const snapshot = path.join(env().CINV_DATA_DIR!, 'pods.json');
    const pods = [
      buildPod({ name: 'web-1', namespace: 'shop', replicas: 3 }),
      buildPod({ name: 'web-2', namespace: 'shop', replicas: 5 }),
      buildPod({ name: 'db-1', namespace: 'data', replicas: 1 }),
    ];
    writeFileSync(snapshot, JSON.stringify({ items: pods }));
    const ingested = await runCli(['ingest', '--source', 'k8s', '--file', snapshot], env());
    expect(ingested.code, ingested.stderr).to.equal(0);
  });

  it('answers a query given as the argument, as JSON when not on a terminal', async () => {
    const run = await runCli(['query', 'namespace = shop | sort name desc | fields name'], env());
    expect(run.code, run.stderr).to.equal(0);
    const answer = JSON.parse(run.stdout);
    expect(answer.kind).to.equal('rows');
    expect(answer.items.map((i: { fields: { name: string } }) => i.fields.name)).to.deep.equal(['web-2', 'web-1']);
  });

  it('reads the query from a file and writes CSV with a header', async () => {
    const file = path.join(env().CINV_DATA_DIR!, 'q.txt');
    writeFileSync(file, 'ci_type = k8s.pod\n| count by namespace\n');
    const run = await runCli(['query', '--file', file, '--format', 'csv'], env());
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout.trim().split('\n')).to.deep.equal(['namespace,count', 'shop,2', 'data,1']);
  });

  it('prints a table on a terminal', async () => {
    const run = await runCliOnTerminal(['query', 'name = db-1 | fields name, namespace'], env());
    expect(run.code, run.stdout).to.equal(0);
    expect(run.stdout).to.match(/ci_id\s+name\s+namespace\n[0-9a-f-]{36}\s+db-1\s+data/);
  });

  it('says where a query is wrong, with the excerpt, and exits 2', async () => {
    const run = await runCli(['query', 'namespace = shop and'], env());
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('line 1, column 21');
    expect(run.stderr).to.include('namespace = shop and\n                    ^');
    const unknown = await runCli(['query', 'namespce = shop'], env());
    expect(unknown.stderr).to.include('did you mean namespace?');
  });

  it('refuses a format it does not know', async () => {
    const run = await runCli(['query', 'name = x', '--format', 'yaml'], env());
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('--format is one of table, json, csv');
  });
});
