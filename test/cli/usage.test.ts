import { expect } from 'chai';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { COMMANDS } from '../../src/cli/usage.js';
import { ROOT, runCli, startServer, stopServer } from '../support/cli.js';

// the commands here open embedded data directories of their own whatever the run's database
describe('cinv command line: help, options and which embedded database', function () {
  this.timeout(120_000);
  let root: string;
  before(() => (root = mkdtempSync(path.join(tmpdir(), 'cinv-usage-'))));
  after(() => rmSync(root, { recursive: true, force: true }));
  const env = (dir: string, extra: Record<string, string> = {}) => ({
    CINV_DATA_DIR: path.join(root, dir),
    DATABASE_URL: undefined,
    PORT: '0',
    ...extra,
  });

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
    expect(unknown.stderr).to.equal(
      'cinv: "cinv sweep" takes no option --frobnicate; it takes --new-database, --help\nRun `cinv sweep --help` for usage.\n',
    );
    // an option no command takes is named with the nearest one the command takes, and its --help
    const typo = await runCli(['keys', 'create', '--tier', 'adm', '--nme', 'x'], env('a'));
    expect(typo.code).to.equal(2);
    expect(typo.stderr).to.equal(
      'cinv: "cinv keys create" takes no option --nme (did you mean --name?); it takes --tier, --name, --scope, --permission, --expires-in, --new-database, --help\n' +
        'Run `cinv keys create --help` for usage.\n',
    );
    const taken = await runCli(['keys', 'list', '--include-revokd'], env('a'));
    expect(taken.code).to.equal(2);
    expect(taken.stderr).to.include('takes no option --include-revokd (did you mean --include-revoked?)');
    const short = await runCli(['ingest', '-x'], env('a'));
    expect(short.code).to.equal(2);
    expect(short.stderr).to.include('"cinv ingest" takes no option -x; it takes --source, --file,');
    const global = await runCli(['--verison'], env('a'));
    expect(global.code).to.equal(2);
    expect(global.stderr).to.equal(
      'cinv: "cinv" takes no option --verison (did you mean --version?); it takes --help, --version\nRun `cinv --help` for usage.\n',
    );
    for (const refused of [typo, taken, short, global]) expect(refused.stderr).to.not.include("'--");
    const extra = await runCli(['migrate', 'now'], env('a'));
    expect(extra.code).to.equal(2);
    expect(extra.stderr).to.include('takes no argument "now"');
    const family = await runCli(['keys'], env('a'));
    expect(family.code).to.equal(2);
    expect(family.stderr).to.include('"cinv keys" needs one of: create, list, revoke');
    expect(existsSync(path.join(root, 'a')), 'a refused command opened no database').to.equal(false);
  });

  it("prints its version, and the general, a group's or a command's help through `cinv help` and --help", async () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const shown = await runCli(['--version'], env('unused'));
    expect(shown).to.deep.equal({ code: 0, stdout: `cinv ${version}\n`, stderr: '' });
    const general = await runCli(['--help'], env('unused'));
    const help = await runCli(['help'], env('unused'));
    expect(help).to.deep.include({ code: 0, stdout: general.stdout });
    expect(help.stdout).to.include('cinv help <command>');
    expect(help.stdout).to.include('cinv --version');
    const command = await runCli(['help', 'keys', 'create'], env('unused'));
    expect(command).to.deep.include({
      code: 0,
      stdout: (await runCli(['keys', 'create', '--help'], env('unused'))).stdout,
    });
    expect(command.stdout).to.match(/^Usage: cinv keys create --tier/);
    for (const group of ['keys', 'users']) {
      const members = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
      for (const args of [
        [group, '--help'],
        ['help', group],
      ]) {
        const shownGroup = await runCli(args, env('unused'));
        expect(shownGroup.code, args.join(' ')).to.equal(0);
        expect(shownGroup.stdout, args.join(' ')).to.match(new RegExp(`^Usage: cinv ${group} <command>`));
        for (const member of members) expect(shownGroup.stdout, args.join(' ')).to.include(`  ${member.name}`);
      }
    }
    const unknown = await runCli(['help', 'frobnicate'], env('unused'));
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.include('unknown command "frobnicate"');
    expect(existsSync(path.join(root, 'unused')), 'help opened no database').to.equal(false);
  });

  it('says which database a command uses, and will not start a new one beside a server that uses another', async () => {
    const server = await startServer(env('served'));
    try {
      const port = String(server.port);
      const stray = await runCli(
        ['keys', 'create', '--tier', 'adm', '--name', 'lost'],
        env('elsewhere', { PORT: port }),
      );
      expect(stray.code).to.equal(2);
      expect(stray.stderr).to.include(
        `${path.join(root, 'elsewhere')} holds no database yet, but a cinv server answers on port ${port}`,
      );
      expect(stray.stdout).to.equal('');
      // refused before anything was written: no database, secret or master key
      expect(existsSync(path.join(root, 'elsewhere')), 'the refused command created its data directory').to.equal(
        false,
      );

      const joined = await runCli(
        ['keys', 'create', '--tier', 'adm', '--name', 'found'],
        env('served', { PORT: port }),
      );
      expect(joined.code, joined.stderr).to.equal(0);
      expect(joined.stderr).to.include(`cinv: using the embedded database in ${path.join(root, 'served')}\n`);
      const reply = await fetch(`http://127.0.0.1:${port}/api/v1/configuration-items`, {
        headers: { 'X-API-Key': joined.stdout.trim() },
      });
      expect(reply.status).to.equal(200);

      const wanted = await runCli(
        ['keys', 'create', '--tier', 'adm', '--name', 'own', '--new-database'],
        env('elsewhere', { PORT: port }),
      );
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
