import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { COMMANDS } from '../../src/cli/usage.js';
import { runCli, startServer, stopServer } from '../support/cli.js';

// the commands here open embedded data directories of their own whatever the run's database
describe('cinv command line: help, options and which embedded database', function () {
  this.timeout(120_000);
  let root: string;
  before(() => (root = mkdtempSync(path.join(tmpdir(), 'cinv-usage-'))));
  after(() => rmSync(root, { recursive: true, force: true }));
  const env = (dir: string, extra: Record<string, string> = {}) => ({ CINV_DATA_DIR: path.join(root, dir), DATABASE_URL: undefined, PORT: '0', ...extra });

  it('gives every command its own --help with its options and an example', async () => {
    for (const command of COMMANDS) {
      const help = await runCli([...command.name.split(' '), '--help'], env('unused'));
      expect(help.code, command.name).to.equal(0);
      expect(help.stdout, command.name).to.match(new RegExp(`^Usage: cinv ${command.name}`));
      expect(help.stdout, command.name).to.include(`Example:\n  ${command.example}`);
      for (const option of Object.keys(command.options)) expect(help.stdout, command.name).to.include(`--${option}`);
      expect(help.stdout.includes('--new-database'), command.name).to.equal(command.database);
    }
    expect(existsSync(path.join(root, 'unused')), 'help opened no database').to.equal(false);
  });

  it('refuses an option or argument the command does not take, naming it and the command', async () => {
    const stray = await runCli(['keys', 'list', '--tier', 'adm'], env('a'));
    expect(stray.code).to.equal(2);
    expect(stray.stderr).to.include('"cinv keys list" takes no option --tier');
    expect(stray.stderr).to.include('cinv keys list --help');
    const unknown = await runCli(['sweep', '--frobnicate'], env('a'));
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.match(/--frobnicate/);
    const extra = await runCli(['migrate', 'now'], env('a'));
    expect(extra.code).to.equal(2);
    expect(extra.stderr).to.include('takes no argument "now"');
    const family = await runCli(['keys'], env('a'));
    expect(family.code).to.equal(2);
    expect(family.stderr).to.include('"cinv keys" needs one of: create, list, revoke');
    expect(existsSync(path.join(root, 'a')), 'a refused command opened no database').to.equal(false);
  });

  it('says which database a command uses, and will not start a new one beside a server that uses another', async () => {
    const server = await startServer(env('served'));
    try {
      const port = String(server.port);
      const stray = await runCli(['keys', 'create', '--tier', 'adm', '--name', 'lost'], env('elsewhere', { PORT: port }));
      expect(stray.code).to.equal(2);
      expect(stray.stderr).to.include(`${path.join(root, 'elsewhere')} holds no database yet, but a cinv server answers on port ${port}`);
      expect(stray.stdout).to.equal('');
      expect(existsSync(path.join(root, 'elsewhere', 'pgdata'))).to.equal(false);

      const joined = await runCli(['keys', 'create', '--tier', 'adm', '--name', 'found'], env('served', { PORT: port }));
      expect(joined.code, joined.stderr).to.equal(0);
      expect(joined.stderr).to.include(`cinv: using the embedded database in ${path.join(root, 'served')}\n`);
      const reply = await fetch(`http://127.0.0.1:${port}/api/v1/configuration-items`, { headers: { 'X-API-Key': joined.stdout.trim() } });
      expect(reply.status).to.equal(200);

      const wanted = await runCli(['keys', 'create', '--tier', 'adm', '--name', 'own', '--new-database'], env('elsewhere', { PORT: port }));
      expect(wanted.code, wanted.stderr).to.equal(0);
      expect(wanted.stderr).to.include(`cinv: using the embedded database in ${path.join(root, 'elsewhere')} (new)`);
      // a new database is migrated first, with its progress (plain lines: not a terminal)
      expect(wanted.stderr).to.match(/migrations (\d+)\/\1 \(100\.0%\)/);
      expect(joined.stderr, 'nothing to apply, no progress').to.not.match(/migrations \d+\//);
    } finally {
      await stopServer(server.child);
    }
  });
});
