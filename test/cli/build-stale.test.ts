import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../src/build.mjs', import.meta.url));

/**
 * A checkout in miniature: src/build.mjs beside a package.json whose build counts its runs and ends
 * with the stamp, as the real one does.
 */
function miniCheckout(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'cinv-build-'));
  mkdirSync(path.join(root, 'src'));
  mkdirSync(path.join(root, 'dist'));
  copyFileSync(SCRIPT, path.join(root, 'src', 'build.mjs'));
  writeFileSync(path.join(root, 'src', 'app.ts'), 'export {};\n');
  const build = "node -e \"require('fs').appendFileSync('builds.txt', 'x')\" && node src/build.mjs --stamp";
  writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'mini', private: true, scripts: { build } }));
  return root;
}

const start = (root: string) => spawnSync(process.execPath, ['src/build.mjs'], { cwd: root, encoding: 'utf8' });
const builds = (root: string) =>
  existsSync(path.join(root, 'builds.txt')) ? readFileSync(path.join(root, 'builds.txt'), 'utf8').length : 0;

describe('npm start builds only what changed since the last build (src/build.mjs)', function () {
  this.timeout(60_000);
  let root: string;
  before(() => (root = miniCheckout()));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('builds on the first start, skips while nothing changed, and builds again after a source changes', () => {
    const first = start(root);
    expect(first.status, first.stderr).to.equal(0);
    expect(first.stdout).to.match(/first start/);
    expect(builds(root)).to.equal(1);

    const again = start(root);
    expect(again.status, again.stderr).to.equal(0);
    expect(again.stdout).to.equal('');
    expect(builds(root)).to.equal(1);

    const later = new Date(Date.now() + 5_000);
    utimesSync(path.join(root, 'src', 'app.ts'), later, later);
    const changed = start(root);
    expect(changed.status, changed.stderr).to.equal(0);
    expect(changed.stdout).to.match(/sources changed/);
    expect(builds(root)).to.equal(2);
  });

  it("ends a build with the package's bin executable, starting with its interpreter", () => {
    const built = miniCheckout();
    try {
      const bin = path.join(built, 'dist', 'src', 'cli.js');
      mkdirSync(path.dirname(bin));
      // as tsc writes it: the mode of a new file, and here without the line naming node
      writeFileSync(bin, "console.log('cinv');\n", { mode: 0o644 });
      const stamped = spawnSync(process.execPath, ['src/build.mjs', '--stamp'], { cwd: built, encoding: 'utf8' });
      expect(stamped.status, stamped.stderr).to.equal(0);
      expect(statSync(bin).mode & 0o777).to.equal(0o755);
      expect(readFileSync(bin, 'utf8')).to.equal("#!/usr/bin/env node\nconsole.log('cinv');\n");
      const run = spawnSync(bin, [], { encoding: 'utf8' });
      expect(run.stdout).to.equal('cinv\n');
      // a line naming the interpreter already there is kept, not doubled
      spawnSync(process.execPath, ['src/build.mjs', '--stamp'], { cwd: built });
      expect(readFileSync(bin, 'utf8')).to.equal("#!/usr/bin/env node\nconsole.log('cinv');\n");
    } finally {
      rmSync(built, { recursive: true, force: true });
    }
  });

  it('fails the start when the build fails, and leaves the stamp as it was', () => {
    const broken = miniCheckout();
    try {
      writeFileSync(
        path.join(broken, 'package.json'),
        JSON.stringify({ name: 'mini', private: true, scripts: { build: 'exit 3' } }),
      );
      const result = start(broken);
      expect(result.status).to.equal(3);
      expect(existsSync(path.join(broken, 'dist', '.build-stamp'))).to.equal(false);
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
  });
});
