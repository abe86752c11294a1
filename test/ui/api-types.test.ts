import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { API_TYPES_COMMAND, API_TYPES_FILE, renderApiTypes } from '../support/write-api-types.js';

/**
 * The web interface is typed by the API's own document: src/ui/app/lib/api-types.generated.ts must be what
 * openapi-typescript generates from test/fixtures/openapi.json (which the OpenAPI snapshot test keeps
 * equal to the served document), so a changed response shape reaches `tsc -p src/ui/app/tsconfig.json`.
 */
describe('The web interface’s generated API types', () => {
  it('are what openapi-typescript generates from the committed OpenAPI document', async () => {
    const expected = (await renderApiTypes()).split('\n');
    const committed = readFileSync(API_TYPES_FILE, 'utf8').split('\n');
    const line = expected.findIndex((text, index) => committed[index] !== text);
    if (line === -1 && committed.length === expected.length) return;
    const at = line === -1 ? expected.length : line;
    expect.fail(
      `${path.relative(process.cwd(), API_TYPES_FILE)} differs from what the document generates, from line ${at + 1}:\n` +
        `  committed: ${committed[at] ?? '(end of file)'}\n  generated: ${expected[at] ?? '(end of file)'}\n` +
        `Run \`${API_TYPES_COMMAND}\` and commit the file (and type-check the web interface against it).`,
    );
  });
});
