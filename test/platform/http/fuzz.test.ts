import { Ajv } from 'ajv';
import { expect } from 'chai';
import fc from 'fast-check';
import { ErrorEnvelope } from '../../../src/platform/http/schemas.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';
import { requestsFor, type FuzzWorld } from '../../support/openapi-fuzz.js';

/**
 * Runs per operation in each database's run; CINV_FUZZ_RUNS raises it (`npm run fuzz` sends 2 000),
 * CINV_FUZZ_SEED replays a reported failure. The two runs of the suite (embedded, PostgreSQL) start
 * from different seeds, so that together they send 400 different requests per operation: at 500 a
 * run, the suite was a fifth of the processor time of all CI on two cores, and a deeper search is a
 * run of its own, not every commit's.
 */
const RUNS = Number(process.env.CINV_FUZZ_RUNS ?? 200);
/**
 * An operation without parameters or body varies only in what every request can carry (unknown
 * parameters, hostile headers, keys): a tenth of the runs covers that, and spares nine in ten
 * of its fetches (of the OpenAPI document, say).
 */
const PARAMETERLESS_RUNS = Math.max(1, Math.ceil(RUNS / 10));
const SEED = Number(process.env.CINV_FUZZ_SEED ?? 20261123 + (onRealPostgres ? 1 : 0));

const validateEnvelope = new Ajv({ strict: false }).compile(JSON.parse(JSON.stringify(ErrorEnvelope)));

/**
 * For every operation of the OpenAPI document, requests generated from its declared parameters
 * and body schema, valid and hostile (wrong types, extremes, unicode, deep nesting, broken
 * encodings, unknown parameters, missing or bad keys). Every answer must be below 500, declared by
 * the operation, and in the error envelope when it is an error; successful JSON bodies are checked
 * against their declared schema by the app itself (a mismatch would surface as a 500).
 */
describe('schema-derived fuzzing of every route', function () {
  // some four minutes alone on two cores; beside the other runs of CI on a busy machine, several times that
  this.timeout(3_600_000);
  let app: TestApp;
  let doc: any;
  let world: FuzzWorld;

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    const node = { ...buildPod({ name: 'fuzz-node' }), external_id: 'node/fuzz-node', ci_type: 'k8s.node' };
    const pods = Array.from({ length: 5 }, (_, i) =>
      buildPod({ name: `fuzz-${i}`, relationships: [{ type: 'runs_on', target_external_id: 'node/fuzz-node' }] }),
    );
    await ingest(sql, [...pods, node], { scopeId: 'c1' });
    await ingest(
      sql,
      pods.map((p) => ({ ...p, raw_data: { ...p.raw_data, extra: 1 } })),
      { scopeId: 'c1' },
    );
    const other = await buildSource(sql, 'other-source');
    const ciIds = await Promise.all([...pods.map((p) => p.external_id), 'node/fuzz-node'].map((id) => ciIdOf(sql, id)));
    const [source] = await sql<{ id: string }[]>`select id::text from sources where name = 'k8s-prod'`;
    world = {
      ciIds,
      sourceIds: [source!.id, other],
      keys: [
        await createKey(sql, 'adm'),
        await createKey(sql, 'ro'),
        await createKey(sql, 'svc', {
          permissions: ['configuration_items:read', 'changes:read', 'configuration_items:write'],
          scopes: [{ sourceId: source!.id, scopeId: 'c1' }],
        }),
      ],
    };
    doc = (await app.get('/openapi.json')).body;
  });

  after(async () => {
    await app?.close();
  });

  it('covers every operation of the OpenAPI document', () => {
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods as object).map((m) => `${m} ${path}`),
    );
    expect(operations.length).to.be.at.least(14);
  });

  const operationsOf = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ path, method })),
    );

  it(`answers ${RUNS} generated requests per operation below 500, with a declared status and the error envelope`, async () => {
    const report: string[] = [];
    for (const { path, method } of operationsOf()) {
      const operation = doc.paths[path][method];
      const declared = new Set(Object.keys(operation.responses).map(Number));
      const runs = (operation.parameters ?? []).length === 0 && !operation.requestBody ? PARAMETERLESS_RUNS : RUNS;
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(requestsFor(doc, path, method, world), async (request) => {
          const response = await fetch(app.baseUrl + request.path, {
            method: request.method,
            headers: request.headers,
            body: request.body,
          });
          const text = await response.text();
          const where = `${request.describe}\n→ ${response.status} ${text.slice(0, 500)}`;
          expect(response.status, where).to.be.below(500);
          expect(declared.has(response.status), `undeclared status: ${where}`).to.equal(true);
          if (response.status >= 400 && (response.headers.get('content-type') ?? '').includes('json')) {
            const body = JSON.parse(text);
            expect(validateEnvelope(body), where).to.equal(true);
            expect(body.error.method, where).to.equal(request.method);
          }
        }),
        { numRuns: runs, seed: SEED, endOnFailure: true },
      );
      report.push(`${method.toUpperCase()} ${path}: ${Math.round(performance.now() - started)} ms`);
    }
    expect(app.logs.filter((line) => line.includes('"level":50'))).to.deep.equal([]);
    console.log(`      ${report.join('\n      ')}`);
  });
});
