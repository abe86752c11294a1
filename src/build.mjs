// Builds dist/ (the server and the web interface) only when it is older than what it is built
// from, so that `npm start` after the first build starts in seconds instead of recompiling.
// `--stamp` records a finished build and makes the package's bin (dist/src/cli.js) an executable
// script; `npm run build` ends with it.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const stamp = path.join(root, 'dist', '.build-stamp');
const bin = path.join(root, 'dist', 'src', 'cli.js');
const inputs = ['src', 'indexer', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];

/** The newest modification time under `entry` (a file or a folder), in milliseconds. */
function newest(entry) {
  if (!existsSync(entry)) return 0;
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const name of readdirSync(entry)) latest = Math.max(latest, newest(path.join(entry, name)));
  return latest;
}

/** `cinv` as npm links it: a script that starts with its interpreter, executable by everyone. */
function makeExecutable(file) {
  if (!existsSync(file)) return;
  const text = readFileSync(file, 'utf8');
  if (!text.startsWith('#!')) writeFileSync(file, `#!/usr/bin/env node\n${text}`);
  chmodSync(file, 0o755);
}

if (process.argv.includes('--stamp')) {
  makeExecutable(bin);
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
} else {
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  const changed = Math.max(...inputs.map((name) => newest(path.join(root, name))));
  if (changed > built) {
    console.log(built === 0 ? 'building cinv (first start)…' : 'building cinv (sources changed since the last build)…');
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const result = spawnSync(npm, ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    process.exit(result.status ?? 1);
  }
}
