import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { COMMANDS } from '../../src/cli/usage.js';
import { ROOT } from '../support/cli.js';

/** The pages a reader is sent to: the front door, the architecture and everything under docs/. */
const PAGES = [
  'README.md',
  'ARCHITECTURE.md',
  'indexer/README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

const read = (page: string) => readFileSync(path.join(ROOT, page), 'utf8');

/** Text outside fenced code blocks, where a link is a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(page: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(read(page)).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Commands as a reader would type them: inline code and the lines of code blocks. */
function commandLines(text: string): string[] {
  const lines: string[] = [];
  for (const [, block] of text.matchAll(/^```[a-z]*\n([\s\S]*?)^```/gm)) lines.push(...block!.split('\n'));
  for (const [, code] of prose(text).matchAll(/`([^`\n]+)`/g)) lines.push(code!);
  // a command may follow an environment assignment or another command
  return lines.flatMap((line) => line.split(/&&|;|\|\|/)).map((line) => line.replace(/^\s*(\$ )?([A-Z_]+=\S+ )*/, ''));
}

const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
const NPM_BUILTINS = new Set(['ci', 'install', 'test', 'start', 'exec', 'pack', 'publish', 'view', 'ls']);
const benches = [...read('test/bench/run.ts').matchAll(/^\s+'?([a-z-]+)'?: \(size/gm)].map((m) => m[1]!);

describe('the README and docs/', () => {
  for (const page of PAGES) {
    it(`${page}: every relative link names a file that exists, and every anchor a heading`, () => {
      const broken: string[] = [];
      for (const [, target] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
        if (!existsSync(path.join(ROOT, resolved))) {
          broken.push(`${target}: no ${resolved}`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && statSync(path.join(ROOT, resolved)).isFile()) {
          if (!anchorsOf(resolved).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${resolved}`);
        }
      }
      expect(broken).to.deep.equal([]);
    });

    it(`${page}: every npm and cinv command it names exists, with the options it shows`, () => {
      const unknown: string[] = [];
      for (const line of commandLines(read(page))) {
        const npm = /^npm (run )?([a-z:-]+)(?: -- (.*))?/.exec(line);
        if (npm) {
          const [, run, name, rest] = npm;
          if (run ? !scripts.includes(name!) : !NPM_BUILTINS.has(name!) && !scripts.includes(name!))
            unknown.push(line.trim());
          else if (name === 'cinv' && rest) checkCinv(rest, line, unknown);
          else if (name === 'bench' && rest && /^[a-z]/.test(rest) && !benches.includes(rest.split(/\s/)[0]!))
            unknown.push(line.trim());
          continue;
        }
        const cinv = /^(?:npx )?cinv (.*)/.exec(line);
        if (cinv) checkCinv(cinv[1]!, line, unknown);
      }
      expect(unknown).to.deep.equal([]);
    });
  }
});

/** `cinv WORDS --options`: the words name a command of the usage table, the options are its own. */
function checkCinv(rest: string, line: string, unknown: string[]) {
  const words = rest.replace(/#.*/, '').trim().split(/\s+/);
  if (words[0] === '--help' || words[0] === '--version' || words[0]?.startsWith('<')) return;
  // `cinv help <command>` is `cinv <command> --help`
  if (words[0] === 'help') words.shift();
  if (words.length === 0 || words[0]?.startsWith('<')) return;
  const command = COMMANDS.find((c) => c.name === words.slice(0, c.name.split(' ').length).join(' '));
  if (!command) {
    unknown.push(line.trim());
    return;
  }
  for (const word of words) {
    const option = /^--([a-z-]+)/.exec(word)?.[1];
    if (option && option !== 'help' && !(option === 'new-database' && command.database) && !(option in command.options))
      unknown.push(`${line.trim()} (no --${option})`);
  }
}
