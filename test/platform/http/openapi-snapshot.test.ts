import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../../support/app.js';
import {
  renderSnapshot,
  servedOpenApi,
  SNAPSHOT_COMMAND,
  SNAPSHOT_FILE,
} from '../../support/write-openapi-snapshot.js';

/**
 * The API surface changes only on purpose: the document served at GET /openapi.json must equal the
 * committed copy in test/fixtures/openapi.json apart from wording, so a change to a path, parameter,
 * schema, status, header or permission shows up as a failing test and as a diff of the copy in review.
 *
 * Wording is every `description` and `summary` string, wherever it sits in the tree; it may change
 * without touching the copy. For that reason there is no byte-for-byte comparison of the copy with
 * the served document: it would fail at every reworded description, which is exactly what is allowed.
 * The copy's wording is refreshed whenever the copy is (`npm run openapi:snapshot`).
 */

const WORDING = new Set(['description', 'summary']);
const SHOWN = 20;
const FIXTURE = path.relative(process.cwd(), SNAPSHOT_FILE);
const REFRESH = `If the change to the API is intended, run \`${SNAPSHOT_COMMAND}\` and commit ${FIXTURE} with it.`;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: Json | undefined): value is { [key: string]: Json } =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The document without its `description` and `summary` strings (an object-valued one, such as a property named so, stays). */
function withoutWording(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutWording);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, child]) => !(WORDING.has(key) && typeof child === 'string'))
      .map(([key, child]) => [key, withoutWording(child)]),
  );
}

const segment = (key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);

function preview(value: Json): string {
  const text = JSON.stringify(value);
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

/** Every JSON path where the two trees differ, in document order. */
function differences(expected: Json, actual: Json, at = '$', found: string[] = []): string[] {
  if (isObject(expected) && isObject(actual)) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort();
    for (const key of keys) {
      const where = at + segment(key);
      if (!Object.hasOwn(actual, key)) found.push(`${where}: removed (was ${preview(expected[key]!)})`);
      else if (!Object.hasOwn(expected, key)) found.push(`${where}: added ${preview(actual[key]!)}`);
      else differences(expected[key]!, actual[key]!, where, found);
    }
  } else if (Array.isArray(expected) && Array.isArray(actual)) {
    for (let index = 0; index < Math.max(expected.length, actual.length); index++) {
      const where = `${at}[${index}]`;
      if (index >= actual.length) found.push(`${where}: removed (was ${preview(expected[index]!)})`);
      else if (index >= expected.length) found.push(`${where}: added ${preview(actual[index]!)}`);
      else differences(expected[index]!, actual[index]!, where, found);
    }
  } else if (JSON.stringify(expected) !== JSON.stringify(actual)) {
    found.push(`${at}: ${preview(expected)} -> ${preview(actual)}`);
  }
  return found;
}

describe('OpenAPI document snapshot', () => {
  let app: TestApp;
  let served: Json;
  let committedText: string;

  before(async () => {
    app = await startTestApp();
    served = (await servedOpenApi(app)) as Json;
    if (!existsSync(SNAPSHOT_FILE)) expect.fail(`${FIXTURE} is missing: run \`${SNAPSHOT_COMMAND}\` to write it.`);
    committedText = readFileSync(SNAPSHOT_FILE, 'utf8');
  });

  after(async () => {
    await app?.close();
  });

  it(`serves the document committed in test/fixtures/openapi.json, apart from description and summary wording`, () => {
    const found = differences(withoutWording(JSON.parse(committedText) as Json), withoutWording(served));
    if (found.length === 0) return;
    const more = found.length > SHOWN ? [`  ... and ${found.length - SHOWN} more`] : [];
    expect.fail(
      [
        `GET /openapi.json differs from ${FIXTURE} beyond description and summary wording ` +
          `(${found.length} difference${found.length === 1 ? '' : 's'}, as committed -> served):`,
        ...found.slice(0, SHOWN).map((line) => `  ${line}`),
        ...more,
        REFRESH,
      ].join('\n'),
    );
  });

  it('keeps the committed copy in the form the snapshot script writes (sorted keys, two-space indent)', () => {
    // a hand-merged or hand-edited copy would make the next refresh's diff noisy
    if (committedText !== renderSnapshot(JSON.parse(committedText))) {
      expect.fail(`${FIXTURE} is not in the form the script writes: run \`${SNAPSHOT_COMMAND}\` to rewrite it.`);
    }
  });
});
