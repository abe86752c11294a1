/**
 * Writes the OpenAPI document the server serves at GET /openapi.json to test/fixtures/openapi.json
 * (or to the file named as the first argument), pretty-printed with sorted keys so that its diffs
 * read well; when it writes the committed copy, the web interface's types generated from it follow
 * (see write-api-types.ts).
 * `npm run openapi:snapshot` runs it; test/platform/http/openapi-snapshot.test.ts compares the
 * served document with the committed copy.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'safe-stable-stringify';
import { startTestApp, type TestApp } from './app.js';
import { closeTestDatabase } from './db.js';
import { writeApiTypes } from './write-api-types.js';

export const SNAPSHOT_FILE = fileURLToPath(new URL('../fixtures/openapi.json', import.meta.url));
export const SNAPSHOT_COMMAND = 'npm run openapi:snapshot';

/** The committed form: keys sorted at every level, two-space indent, a final newline. */
export function renderSnapshot(document: unknown): string {
  return `${stringify(document, null, 2)}\n`;
}

/** The document as a client gets it. */
export async function servedOpenApi(app: TestApp): Promise<Record<string, unknown>> {
  const reply = await app.get<Record<string, unknown>>('/openapi.json');
  if (reply.status !== 200) throw new Error(`GET /openapi.json answered ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply.body;
}

async function main(): Promise<void> {
  const target = path.resolve(process.argv[2] ?? SNAPSHOT_FILE);
  const app = await startTestApp();
  try {
    writeFileSync(target, renderSnapshot(await servedOpenApi(app)));
  } finally {
    await app.close();
    await closeTestDatabase();
  }
  const shown = path.relative(process.cwd(), target);
  console.log(`wrote ${shown.startsWith('..') ? target : shown}`);
  // a copy written elsewhere is for looking at; the committed one is what the interface is typed by
  if (target === SNAPSHOT_FILE) await writeApiTypes(target);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().then(
    // the app leaves timers of its own (metrics, rate limits) behind; nothing is pending here
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
