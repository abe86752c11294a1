import { readFileSync } from 'node:fs';
import { Client, errors } from '@opensearch-project/opensearch';
import { expect } from 'chai';
import { startFakeOpenSearch, type FakeOpenSearch } from '../../support/fake-opensearch/index.js';

/** The project's real index template for change records. */
const template = JSON.parse(readFileSync(new URL('../../../mappings/change-records.json', import.meta.url), 'utf8'));
const INDEX = 'cinv-changes-000001';

function changeRecord(id: number, overrides: Record<string, unknown> = {}): Record<string, any> {
  return {
    id,
    tenant_id: 'tenant-a',
    source_id: 'source-1',
    scope_id: 'scope-1',
    ci_id: `ci-${id}`,
    ci_name: `host-${id}`,
    ci_namespace: 'prod',
    ci_type: 'server',
    change_type: 'updated',
    changed_at: '2024-03-04T10:15:00.000Z',
    changed_fields: ['cpu'],
    has_changes: true,
    changes: { cpu: { before: 2, after: 4 }, free: ['form', { deeply: { nested: true } }] },
    tokens: { name: [`host-${id}`], meta: ['env=prod'], field: ['cpu'], value: ['4'] },
    ...overrides,
  };
}

/** NDJSON lines indexing each record under its id, routed by tenant, as the project's indexer does. */
function indexLines(index: string, records: Record<string, any>[]): Record<string, any>[] {
  return records.flatMap((record) => [
    { index: { _index: index, _id: String(record.id), routing: record.tenant_id } },
    record,
  ]);
}

async function expectResponseError(promise: Promise<unknown>): Promise<errors.ResponseError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(errors.ResponseError);
    return error as errors.ResponseError;
  }
  throw new Error('expected the request to fail');
}

describe('fake OpenSearch server (a test double: no OpenSearch can run here)', () => {
  let fake: FakeOpenSearch;
  let client: Client;

  before(async () => {
    fake = await startFakeOpenSearch();
    client = new Client({ node: fake.url });
  });

  after(async () => {
    await client.close();
    await fake.close();
  });

  beforeEach(() => fake.reset());

  async function seed(records: Record<string, any>[], index = INDEX): Promise<void> {
    await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template });
    const { body }: any = await client.bulk({ body: indexLines(index, records), refresh: 'wait_for' });
    expect(body.errors, JSON.stringify(body.items)).to.equal(false);
  }

  async function searchIds(body: Record<string, any>, index = INDEX): Promise<string[]> {
    const response = await client.search({ index, body });
    return response.body.hits.hits.map((hit: any) => hit._id);
  }

  describe('the fake cluster and index administration', () => {
    it('the fake answers GET / and cluster health like an OpenSearch 2.19 node', async () => {
      const info: any = await client.info();
      expect(info.body.version).to.include({ distribution: 'opensearch', number: '2.19.0' });
      expect(info.body.tagline).to.equal('The OpenSearch Project: https://opensearch.org/');
      const health: any = await client.cluster.health();
      expect(health.body).to.include({ cluster_name: 'fake', status: 'green', number_of_nodes: 1 });
    });

    it('the fake stores the project index template and applies it to a matching new index', async () => {
      expect((await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template })).body).to.deep.equal({
        acknowledged: true,
      });
      expect((await client.indices.existsIndexTemplate({ name: 'cinv-changes' })).body).to.equal(true);
      expect((await client.indices.existsIndexTemplate({ name: 'nope' })).body).to.equal(false);
      const stored: any = await client.indices.getIndexTemplate({ name: 'cinv-changes' });
      expect(stored.body.index_templates[0].name).to.equal('cinv-changes');
      expect(stored.body.index_templates[0].index_template.index_patterns).to.deep.equal(['cinv-changes-*']);
      const missing = await expectResponseError(client.indices.getIndexTemplate({ name: 'nope' }));
      expect(missing.meta.statusCode).to.equal(404);

      const created = await client.indices.create({ index: INDEX });
      expect(created.body).to.deep.equal({ acknowledged: true, shards_acknowledged: true, index: INDEX });
      expect((await client.indices.exists({ index: INDEX })).body).to.equal(true);
      expect((await client.indices.exists({ index: 'cinv-changes-missing' })).body).to.equal(false);
      const described = (await client.indices.get({ index: INDEX })).body[INDEX] as any;
      expect(described.mappings).to.deep.equal(template.template.mappings);
      expect(described.settings.index).to.include({
        number_of_shards: '1',
        max_result_window: '10000',
        provided_name: INDEX,
      });

      const again = await expectResponseError(client.indices.create({ index: INDEX }));
      expect(again.meta.statusCode).to.equal(400);
      expect(again.meta.body.error.type).to.equal('resource_already_exists_exception');
      expect(again.meta.body.error.root_cause[0].type).to.equal('resource_already_exists_exception');

      await client.indices.create({
        index: 'unrelated',
        body: { mappings: { properties: { a: { type: 'keyword' } } } },
      });
      expect(((await client.indices.get({ index: 'unrelated' })).body.unrelated as any).mappings).to.deep.equal({
        properties: { a: { type: 'keyword' } },
      });
      expect(fake.indices()).to.deep.equal([INDEX, 'unrelated']);

      expect((await client.indices.delete({ index: 'unrelated' })).body).to.deep.equal({ acknowledged: true });
      const gone = await expectResponseError(client.indices.get({ index: 'unrelated' }));
      expect(gone.meta.statusCode).to.equal(404);
      expect(gone.meta.body.error.type).to.equal('index_not_found_exception');
    });

    const mappingOf = async (index = INDEX): Promise<any> =>
      ((await client.indices.getMapping({ index })).body as any)[index].mappings;

    it('the fake adds fields to an existing index with PUT _mapping, at any depth and through an alias, and indexes them', async () => {
      const { properties } = template.template.mappings;
      const { moved_from_scope_id: _added, ...before } = properties;
      await client.indices.create({
        index: INDEX,
        body: { mappings: { ...template.template.mappings, properties: before }, aliases: { 'cinv-changes': {} } },
      });
      expect(Object.keys((await mappingOf()).properties)).to.not.include('moved_from_scope_id');
      const strict = await client.bulk({
        body: indexLines(INDEX, [changeRecord(1, { moved_from_scope_id: 'scope-0' })]),
      });
      expect((strict.body as any).items[0].index.error.type).to.equal('strict_dynamic_mapping_exception');

      const put = await client.indices.putMapping({
        index: 'cinv-changes',
        body: {
          properties: {
            moved_from_scope_id: { type: 'keyword' },
            tokens: { properties: { extra: { type: 'keyword' } } },
          },
        },
      });
      expect(put.body).to.deep.equal({ acknowledged: true });
      const after = await mappingOf();
      expect(after.properties.moved_from_scope_id).to.deep.equal({ type: 'keyword' });
      // an object's fields are merged, not replaced
      expect(after.properties.tokens.properties).to.deep.equal({
        ...properties.tokens.properties,
        extra: { type: 'keyword' },
      });
      expect(after.dynamic).to.equal('strict');
      expect(after._routing).to.deep.equal({ required: true });
      // the same properties again (a second start) change nothing
      await client.indices.putMapping({
        index: INDEX,
        body: { properties: { moved_from_scope_id: { type: 'keyword' } } },
      });
      expect(await mappingOf()).to.deep.equal(after);

      const { body }: any = await client.bulk({
        body: indexLines(INDEX, [changeRecord(1, { moved_from_scope_id: 'scope-0' }), changeRecord(2)]),
        refresh: 'wait_for',
      });
      expect(body.errors, JSON.stringify(body.items)).to.equal(false);
      expect(await searchIds({ query: { term: { moved_from_scope_id: 'scope-0' } } })).to.deep.equal(['1']);
      expect(
        await searchIds({ query: { bool: { must_not: [{ exists: { field: 'moved_from_scope_id' } }] } } }),
      ).to.deep.equal(['2']);
    });

    it("the fake refuses to change a mapped field's type with a 400 illegal_argument_exception, and changes nothing", async () => {
      await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template });
      await client.indices.create({ index: INDEX });
      const mapped = await mappingOf();
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ scope_id: { type: 'long' } }, /^mapper \[scope_id\] cannot be changed from type \[keyword\] to \[long\]$/],
        [
          { tokens: { properties: { name: { type: 'text' } } } },
          /^mapper \[tokens\.name\] cannot be changed from type \[keyword\] to \[text\]$/,
        ],
        [{ tokens: { type: 'keyword' } }, /tokens/],
        // a field to add beside a refused one is not added either
        [
          { added: { type: 'keyword' }, changed_at: { type: 'keyword' } },
          /^mapper \[changed_at\] cannot be changed from type \[date\] to \[keyword\]$/,
        ],
      ];
      for (const [properties, reason] of refusals) {
        const refused = await expectResponseError(
          client.indices.putMapping({ index: INDEX, body: { properties } as never }),
        );
        expect(refused.meta.statusCode).to.equal(400);
        expect(refused.meta.body.error.type).to.equal('illegal_argument_exception');
        expect(refused.meta.body.error.reason).to.match(reason);
        expect(refused.meta.body.error.root_cause[0].type).to.equal('illegal_argument_exception');
        expect(await mappingOf()).to.deep.equal(mapped);
      }
      // a type written out where the index has none: an object is an object
      expect(
        (
          await client.indices.putMapping({
            index: INDEX,
            body: { properties: { tokens: { type: 'object', properties: {} } } },
          })
        ).body,
      ).to.deep.include({ acknowledged: true });
      const empty = await expectResponseError(client.indices.putMapping({ index: INDEX, body: {} }));
      expect(empty.meta.body.error.type).to.equal('action_request_validation_exception');
      const missing = await expectResponseError(
        client.indices.putMapping({ index: 'cinv-changes-missing', body: { properties: { a: { type: 'keyword' } } } }),
      );
      expect(missing.meta.statusCode).to.equal(404);
    });
  });

  describe('the fake _bulk endpoint', () => {
    it('the fake auto-creates the index from the template and reports per-item results and mapping failures', async () => {
      await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template });
      const { body }: any = await client.bulk({
        body: [
          ...indexLines(INDEX, [changeRecord(1)]),
          ...indexLines(INDEX, [changeRecord(2, { unexpected: 'field' })]),
          ...indexLines(INDEX, [changeRecord(3, { tokens: { name: ['x'], colour: ['red'] } })]),
          { index: { _index: INDEX, _id: '4' } },
          changeRecord(4),
          ...indexLines(INDEX, [changeRecord(5, { changes: { anything: { goes: ['here', 1, null] } } })]),
          ...indexLines(INDEX, [changeRecord(6, { id: 'not-a-number' })]),
        ],
      });
      expect(fake.indices()).to.deep.equal([INDEX]);
      expect(body.errors).to.equal(true);
      const items = body.items.map((item: any) => item.index);
      expect(items.map((item: any) => item.status)).to.deep.equal([201, 400, 400, 400, 201, 400]);
      expect(items[0]).to.include({ _index: INDEX, _id: '1', _version: 1, result: 'created' });
      expect(items[1].error.type).to.equal('strict_dynamic_mapping_exception');
      expect(items[1].error.reason).to.include('[unexpected]');
      expect(items[2].error.type).to.equal('strict_dynamic_mapping_exception');
      expect(items[2].error.reason).to.include('within [tokens]');
      expect(items[3].error.type).to.equal('routing_missing_exception');
      expect(items[5].error.type).to.equal('mapper_parsing_exception');
      const stored = fake.documents(INDEX);
      expect([...stored.keys()]).to.deep.equal(['1', '5']);
      expect(stored.get('1')).to.deep.equal({ source: changeRecord(1), routing: 'tenant-a', version: 1 });
    });

    it('the fake re-indexes the same _id idempotently: one document at version 2, result updated', async () => {
      await seed([changeRecord(7)]);
      const { body }: any = await client.bulk({ body: indexLines(INDEX, [changeRecord(7, { ci_name: 'renamed' })]) });
      expect(body.items[0].index).to.include({ _id: '7', _version: 2, result: 'updated', status: 200 });
      expect(fake.documents(INDEX).size).to.equal(1);
      expect(fake.documents(INDEX).get('7')).to.include({ version: 2 });
      expect(fake.documents(INDEX).get('7')?.source.ci_name).to.equal('renamed');
      const count = await client.count({ index: INDEX });
      expect(count.body.count).to.equal(1);
    });

    it('the fake creates and deletes through create/delete actions with OpenSearch statuses', async () => {
      await seed([changeRecord(1)]);
      const { body }: any = await client.bulk({
        body: [
          { create: { _index: INDEX, _id: '1', routing: 'tenant-a' } },
          changeRecord(1),
          { delete: { _index: INDEX, _id: '1', routing: 'tenant-a' } },
          { delete: { _index: INDEX, _id: '1', routing: 'tenant-a' } },
        ],
      });
      expect(body.items[0].create.status).to.equal(409);
      expect(body.items[0].create.error.type).to.equal('version_conflict_engine_exception');
      expect(body.items[1].delete).to.include({ result: 'deleted', status: 200 });
      expect(body.items[2].delete).to.include({ result: 'not_found', status: 404 });
      expect(fake.documents(INDEX).size).to.equal(0);
    });

    it('the fake fails the items injected with failItems (400 always, 429 once)', async () => {
      await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template });
      fake.failItems(['2'], { status: 400, type: 'mapper_parsing_exception', reason: 'bad document' });
      fake.failItems(['3'], { status: 429, type: 'es_rejected_execution_exception' }, { times: 1 });
      const first: any = await client.bulk({
        body: indexLines(INDEX, [changeRecord(1), changeRecord(2), changeRecord(3)]),
      });
      const statuses = (response: any) => response.body.items.map((item: any) => item.index.status);
      expect(first.body.errors).to.equal(true);
      expect(statuses(first)).to.deep.equal([201, 400, 429]);
      expect(first.body.items[1].index.error).to.include({ type: 'mapper_parsing_exception', reason: 'bad document' });
      expect(first.body.items[2].index.error.type).to.equal('es_rejected_execution_exception');

      const retry: any = await client.bulk({ body: indexLines(INDEX, [changeRecord(2), changeRecord(3)]) });
      expect(statuses(retry)).to.deep.equal([400, 201]);
      fake.clearFailures();
      const cleared: any = await client.bulk({ body: indexLines(INDEX, [changeRecord(2)]) });
      expect(statuses(cleared)).to.deep.equal([201]);
    });
  });

  describe('the fake request failure injection', () => {
    let noRetry: Client;
    before(() => {
      noRetry = new Client({ node: fake.url, maxRetries: 0 });
    });
    after(async () => {
      await noRetry.close();
    });

    it('the fake resets the connection so the client sees a ConnectionError', async () => {
      fake.failNext({ kind: 'reset' });
      try {
        await noRetry.info();
        expect.fail('expected a connection error');
      } catch (error) {
        expect(error).to.be.instanceOf(errors.ConnectionError);
      }
      expect((await noRetry.info()).statusCode).to.equal(200);
    });

    it('the fake answers 429 and 503 with OpenSearch error bodies, only on the matching path', async () => {
      fake.failNext({ kind: 'status', status: 429 }, { path: /_bulk$/ });
      expect((await noRetry.info()).statusCode).to.equal(200);
      const rejected = await expectResponseError(noRetry.bulk({ body: indexLines('any', [changeRecord(1)]) }));
      expect(rejected.meta.statusCode).to.equal(429);
      expect(rejected.meta.body.error.type).to.equal('es_rejected_execution_exception');
      expect(rejected.meta.body.status).to.equal(429);
      expect(fake.indices()).to.deep.equal([]);

      fake.failNext({ kind: 'status', status: 503 }, { times: 2 });
      for (let attempt = 0; attempt < 2; attempt++) {
        const unavailable = await expectResponseError(noRetry.cluster.health());
        expect(unavailable.meta.statusCode).to.equal(503);
        expect(unavailable.meta.body.error.root_cause[0].type).to.equal('fake_injected_failure');
      }
      expect((await noRetry.cluster.health()).statusCode).to.equal(200);
    });

    it('the fake lets the default client retry a 503 and records both attempts', async () => {
      fake.failNext({ kind: 'status', status: 503 });
      expect((await client.cluster.health()).statusCode).to.equal(200);
      expect(fake.requests.map((request) => `${request.method} ${request.path}`)).to.deep.equal([
        'GET /_cluster/health',
        'GET /_cluster/health',
      ]);
    });
  });

  describe('the fake aliases', () => {
    it('the fake adds, removes and swaps aliases atomically, and bulk/search go through the alias', async () => {
      await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template });
      await client.indices.create({ index: 'cinv-changes-a' });
      await client.indices.create({ index: 'cinv-changes-b' });
      await client.indices.updateAliases({
        body: { actions: [{ add: { index: 'cinv-changes-a', alias: 'cinv-changes' } }] },
      });
      expect(fake.aliases()).to.deep.equal({ 'cinv-changes': ['cinv-changes-a'] });
      expect((await client.indices.exists({ index: 'cinv-changes' })).body).to.equal(true);

      const written: any = await client.bulk({ body: indexLines('cinv-changes', [changeRecord(1)]) });
      expect(written.body.items[0].index._index).to.equal('cinv-changes-a');
      expect(await searchIds({}, 'cinv-changes')).to.deep.equal(['1']);

      const swap = {
        actions: [
          { remove: { index: 'cinv-changes-a', alias: 'cinv-changes' } },
          { add: { index: 'cinv-changes-b', alias: 'cinv-changes' } },
        ],
      };
      expect((await client.indices.updateAliases({ body: swap })).body).to.deep.equal({ acknowledged: true });
      expect(fake.aliases()).to.deep.equal({ 'cinv-changes': ['cinv-changes-b'] });
      expect(await searchIds({}, 'cinv-changes')).to.deep.equal([]);
      const alias: any = await client.indices.getAlias({ name: 'cinv-changes' });
      expect(alias.body).to.deep.equal({ 'cinv-changes-b': { aliases: { 'cinv-changes': {} } } });

      const failing = {
        actions: [
          { remove: { index: 'cinv-changes-b', alias: 'cinv-changes' } },
          { add: { index: 'cinv-changes-nope', alias: 'cinv-changes' } },
        ],
      };
      const rejected = await expectResponseError(client.indices.updateAliases({ body: failing }));
      expect(rejected.meta.statusCode).to.equal(404);
      expect(rejected.meta.body.error.type).to.equal('index_not_found_exception');
      expect(fake.aliases(), 'nothing applied').to.deep.equal({ 'cinv-changes': ['cinv-changes-b'] });

      await client.indices.updateAliases({
        body: { actions: [{ add: { index: 'cinv-changes-a', alias: 'cinv-changes' } }] },
      });
      const ambiguous: any = await client.bulk({ body: indexLines('cinv-changes', [changeRecord(2)]) });
      expect(ambiguous.body.items[0].index.status).to.equal(400);
      expect(ambiguous.body.items[0].index.error.type).to.equal('illegal_argument_exception');
      expect(await searchIds({}, 'cinv-changes')).to.deep.equal(['1']);

      const missing = await expectResponseError(client.indices.getAlias({ name: 'nope' }));
      expect(missing.meta.statusCode).to.equal(404);
      expect(missing.meta.body).to.deep.equal({ error: 'alias [nope] missing', status: 404 });
    });
  });

  describe('the fake query DSL', () => {
    const records = [
      changeRecord(1, {
        ci_name: 'web-01',
        ci_type: 'server',
        change_type: 'created',
        changed_at: '2024-03-01T08:00:00Z',
        tokens: { name: ['web-01'], field: ['cpu', 'ram'] },
      }),
      changeRecord(2, {
        ci_name: 'web-02',
        ci_type: 'server',
        change_type: 'updated',
        changed_at: '2024-03-02T08:00:00Z',
        changed_fields: ['ram', 'disk'],
      }),
      changeRecord(3, {
        ci_name: 'db-01',
        ci_type: 'database',
        change_type: 'deleted',
        changed_at: '2024-03-03T08:00:00',
        has_changes: false,
      }),
      changeRecord(4, {
        ci_name: 'DB-02',
        ci_type: 'database',
        change_type: 'updated',
        changed_at: 1709539200000,
        changed_fields: [],
      }),
      changeRecord(5, {
        ci_name: 'lb-01',
        ci_type: 'network',
        change_type: 'updated',
        changed_at: '2024-03-05T08:00:00.000+02:00',
        tenant_id: 'tenant-b',
      }),
    ];
    beforeEach(() => seed(records));

    it('the fake evaluates term, terms, prefix, wildcard, range, exists and ids', async () => {
      expect(await searchIds({ query: { term: { ci_type: 'database' } } })).to.have.members(['3', '4']);
      expect(
        await searchIds({ query: { term: { ci_name: { value: 'db-02', case_insensitive: true } } } }),
      ).to.deep.equal(['4']);
      expect(await searchIds({ query: { term: { id: '2' } } }), 'long field compares as a number').to.deep.equal(['2']);
      expect(await searchIds({ query: { term: { has_changes: 'false' } } })).to.deep.equal(['3']);
      expect(
        await searchIds({ query: { term: { changed_fields: 'disk' } } }),
        'arrays match any element',
      ).to.deep.equal(['2']);
      expect(await searchIds({ query: { terms: { change_type: ['created', 'deleted'] } } })).to.have.members([
        '1',
        '3',
      ]);
      expect(await searchIds({ query: { prefix: { ci_name: 'web-' } } })).to.have.members(['1', '2']);
      expect(
        await searchIds({ query: { prefix: { ci_name: { value: 'db', case_insensitive: true } } } }),
      ).to.have.members(['3', '4']);
      expect(await searchIds({ query: { wildcard: { ci_name: { value: '*-0?' } } } })).to.have.length(5);
      expect(
        await searchIds({ query: { wildcard: { ci_name: { value: 'd*', case_insensitive: true } } } }),
      ).to.have.members(['3', '4']);
      expect(
        await searchIds({ query: { term: { 'tokens.field': 'ram' } } }),
        'dotted paths into objects',
      ).to.deep.equal(['1']);
      // 3 has no zone (UTC); 4 is epoch ms for 2024-03-04T08:00Z; 5 is 06:00Z.
      const range = { range: { changed_at: { gte: '2024-03-03T08:00:00Z', lt: '2024-03-05T06:00:00Z' } } };
      expect(await searchIds({ query: range })).to.have.members(['3', '4']);
      expect(await searchIds({ query: { range: { id: { gt: 3 } } } })).to.have.members(['4', '5']);
      expect(
        await searchIds({ query: { range: { ci_name: { gte: 'm' } } } }),
        'keywords compare as strings',
      ).to.deep.equal(['1', '2']);
      expect(
        await searchIds({ query: { exists: { field: 'changed_fields' } } }),
        'empty arrays do not exist',
      ).to.have.members(['1', '2', '3', '5']);
      expect(
        await searchIds({ query: { exists: { field: 'changes' } } }),
        'disabled objects are not indexed',
      ).to.deep.equal([]);
      expect(await searchIds({ query: { ids: { values: ['2', '5', '99'] } } })).to.have.members(['2', '5']);
    });

    it('the fake applies bool semantics: filter, must_not, should and minimum_should_match', async () => {
      const filterOnly = {
        bool: { filter: [{ term: { tenant_id: 'tenant-a' } }], must_not: { term: { ci_type: 'database' } } },
      };
      expect(await searchIds({ query: filterOnly })).to.have.members(['1', '2']);
      const shouldOnly = { bool: { should: [{ term: { ci_type: 'network' } }, { term: { change_type: 'created' } }] } };
      expect(await searchIds({ query: shouldOnly }), 'should alone requires one match').to.have.members(['1', '5']);
      const withFilter = {
        bool: { filter: { term: { ci_type: 'server' } }, should: [{ term: { change_type: 'deleted' } }] },
      };
      expect(await searchIds({ query: withFilter }), 'should is optional beside filter').to.have.members(['1', '2']);
      const required = { ...withFilter, bool: { ...withFilter.bool, minimum_should_match: 1 } };
      expect(await searchIds({ query: required })).to.deep.equal([]);
      const twoOfThree = {
        bool: {
          should: [
            { term: { ci_type: 'server' } },
            { term: { change_type: 'updated' } },
            { term: { has_changes: true } },
          ],
          minimum_should_match: 2,
        },
      };
      expect(await searchIds({ query: twoOfThree })).to.have.members(['1', '2', '4', '5']);
    });

    it('the fake scores boosts and bool sums, and sorts by _score descending by default', async () => {
      const query = {
        bool: {
          filter: [{ term: { tenant_id: 'tenant-a' } }],
          should: [
            { term: { ci_type: { value: 'database', boost: 3 } } },
            { prefix: { ci_name: 'db' } },
            { terms: { change_type: ['updated'], boost: 2 } },
          ],
        },
      };
      const { body }: any = await client.search({ index: INDEX, body: { query } });
      expect(body.hits.hits.map((hit: any) => [hit._id, hit._score])).to.deep.equal([
        ['4', 5],
        ['3', 4],
        ['2', 2],
        ['1', 0],
      ]);
      expect(body.hits.max_score).to.equal(5);
      expect(body.hits.hits[0]._routing).to.equal('tenant-a');
      const matchAll: any = await client.search({ index: INDEX, body: { query: { match_all: {} } } });
      expect(matchAll.body.hits.hits.every((hit: any) => hit._score === 1)).to.equal(true);
    });

    it('the fake sorts on fields, pages with from/size and counts total hits', async () => {
      const sorted: any = await client.search({
        index: INDEX,
        body: { sort: [{ changed_at: { order: 'desc' } }], size: 2, from: 1 },
      });
      expect(sorted.body.hits.total).to.deep.equal({ value: 5, relation: 'eq' });
      expect(sorted.body.hits.max_score).to.equal(null);
      expect(sorted.body.hits.hits.map((hit: any) => [hit._id, hit._score, hit.sort])).to.deep.equal([
        ['4', null, [1709539200000]],
        ['3', null, [Date.parse('2024-03-03T08:00:00Z')]],
      ]);
      const byTypeThenName = await searchIds({ sort: ['ci_type', { ci_name: 'desc' }] });
      expect(byTypeThenName).to.deep.equal(['3', '4', '5', '2', '1']);
      const missingLast = await searchIds({ sort: [{ changed_fields: 'asc' }, { id: 'asc' }] });
      expect(missingLast).to.deep.equal(['1', '3', '5', '2', '4']);
      const limited: any = await client.search({ index: INDEX, body: { track_total_hits: 2, size: 0 } });
      expect(limited.body.hits.total).to.deep.equal({ value: 2, relation: 'gte' });
      expect(limited.body.hits.hits).to.deep.equal([]);
      const filtered: any = await client.search({
        index: INDEX,
        body: { query: { ids: { values: ['1'] } }, _source: ['ci_name', 'tokens.name'] },
      });
      expect(filtered.body.hits.hits[0]._source).to.deep.equal({ ci_name: 'web-01', tokens: { name: ['web-01'] } });
    });

    it('the fake refuses a result window over 10000 with a 400 like max_result_window', async () => {
      const error = await expectResponseError(client.search({ index: INDEX, body: { from: 9995, size: 10 } }));
      expect(error.meta.statusCode).to.equal(400);
      expect(error.meta.body.error.root_cause[0].type).to.equal('illegal_argument_exception');
      expect(error.meta.body.error.root_cause[0].reason).to.match(
        /^Result window is too large, from \+ size must be less than or equal to: \[10000\] but was \[10005\]/,
      );
      expect((await client.search({ index: INDEX, body: { from: 9990, size: 10 } })).statusCode).to.equal(200);
    });

    it('the fake refuses clauses outside its subset with a 400 parsing_exception', async () => {
      for (const body of [
        { query: { match: { ci_name: 'web' } } },
        { aggs: { x: { avg: { field: 'id' } } } },
        { highlight: {} },
      ]) {
        const error = await expectResponseError(client.search({ index: INDEX, body: body as any }));
        expect(error.meta.statusCode).to.equal(400);
        expect(error.meta.body.error.type).to.equal('parsing_exception');
        expect(error.meta.body.error.reason).to.match(/\[(match|avg|highlight)\]/);
      }
      const missingIndex = await expectResponseError(client.search({ index: 'cinv-changes-nope', body: {} }));
      expect(missingIndex.meta.statusCode).to.equal(404);
    });

    it('the fake counts matching documents', async () => {
      const { body }: any = await client.count({ index: INDEX, body: { query: { term: { ci_type: 'server' } } } });
      expect(body.count).to.equal(2);
      expect(body._shards).to.include({ total: 1, successful: 1, failed: 0 });
      expect((await client.count({ index: INDEX })).body.count).to.equal(5);
    });
  });

  describe('the fake aggregations', () => {
    it('the fake computes terms, cardinality, value_count and filter aggregations with sub-aggregations', async () => {
      await seed([
        changeRecord(1, { ci_type: 'server', changed_fields: ['cpu', 'ram', 'cpu'] }),
        changeRecord(2, { ci_type: 'server', changed_fields: ['ram'] }),
        changeRecord(3, { ci_type: 'database', changed_fields: ['disk'], ci_id: 'ci-1' }),
        changeRecord(4, { ci_type: 'network', changed_fields: ['ram'] }),
      ]);
      const aggs: Record<string, any> = {
        types: { terms: { field: 'ci_type', size: 2 }, aggs: { cis: { cardinality: { field: 'ci_id' } } } },
        fields: { terms: { field: 'changed_fields' } },
        cis: { cardinality: { field: 'ci_id', precision_threshold: 100 } },
        values: { value_count: { field: 'changed_fields' } },
        servers: {
          filter: { term: { ci_type: 'server' } },
          aggs: { fields: { terms: { field: 'changed_fields', order: { _key: 'asc' } } } },
        },
      };
      const { body }: any = await client.search({ index: INDEX, body: { size: 0, aggs } });
      expect(body.aggregations.types).to.deep.equal({
        doc_count_error_upper_bound: 0,
        sum_other_doc_count: 1,
        buckets: [
          { key: 'server', doc_count: 2, cis: { value: 2 } },
          { key: 'database', doc_count: 1, cis: { value: 1 } },
        ],
      });
      expect(body.aggregations.fields.buckets).to.deep.equal([
        { key: 'ram', doc_count: 3 },
        { key: 'cpu', doc_count: 1 },
        { key: 'disk', doc_count: 1 },
      ]);
      expect(body.aggregations.cis.value).to.equal(3);
      expect(body.aggregations.values.value).to.equal(5);
      expect(body.aggregations.servers.doc_count).to.equal(2);
      expect(body.aggregations.servers.fields.buckets.map((bucket: any) => bucket.key)).to.deep.equal(['cpu', 'ram']);
    });

    it('the fake buckets date_histogram by hour, day and Monday-based week, filling empty buckets', async () => {
      await seed([
        changeRecord(1, { changed_at: '2024-03-03T23:30:00Z' }), // Sunday
        changeRecord(2, { changed_at: '2024-03-04T00:00:00Z' }), // Monday
        changeRecord(3, { changed_at: '2024-03-04T00:59:59.999Z' }),
        changeRecord(4, { changed_at: '2024-03-10T23:59:59Z' }), // Sunday
        changeRecord(5, { changed_at: '2024-03-18T12:00:00Z' }), // Monday, two weeks later
      ]);
      const histogram = async (interval: string, extra: Record<string, unknown> = {}) => {
        const aggs = {
          over_time: {
            date_histogram: { field: 'changed_at', calendar_interval: interval, time_zone: 'UTC', ...extra },
          },
        };
        const { body }: any = await client.search({ index: INDEX, body: { size: 0, aggs } as any });
        return body.aggregations.over_time.buckets.map((bucket: any) => [bucket.key_as_string, bucket.doc_count]);
      };
      expect(await histogram('week')).to.deep.equal([
        ['2024-02-26T00:00:00.000Z', 1],
        ['2024-03-04T00:00:00.000Z', 3],
        ['2024-03-11T00:00:00.000Z', 0],
        ['2024-03-18T00:00:00.000Z', 1],
      ]);
      expect(await histogram('1w', { min_doc_count: 1 })).to.have.length(3);
      const days = await histogram('day', { min_doc_count: 1 });
      expect(days).to.deep.equal([
        ['2024-03-03T00:00:00.000Z', 1],
        ['2024-03-04T00:00:00.000Z', 2],
        ['2024-03-10T00:00:00.000Z', 1],
        ['2024-03-18T00:00:00.000Z', 1],
      ]);
      expect(await histogram('1d')).to.have.length(16);
      const hours = await histogram('hour');
      expect(hours.slice(0, 2)).to.deep.equal([
        ['2024-03-03T23:00:00.000Z', 1],
        ['2024-03-04T00:00:00.000Z', 2],
      ]);
      const { body }: any = await client.search({
        index: INDEX,
        body: {
          size: 0,
          aggs: { h: { date_histogram: { field: 'changed_at', calendar_interval: '1h', min_doc_count: 1 } } },
        },
      });
      expect(body.aggregations.h.buckets[0]).to.deep.equal({
        key_as_string: '2024-03-03T23:00:00.000Z',
        key: Date.parse('2024-03-03T23:00:00Z'),
        doc_count: 1,
      });
    });

    it('the fake pages composite aggregations with after_key', async () => {
      await seed([
        changeRecord(1, { ci_type: 'server', change_type: 'updated' }),
        changeRecord(2, { ci_type: 'server', change_type: 'created' }),
        changeRecord(3, { ci_type: 'database', change_type: 'updated' }),
        changeRecord(4, { ci_type: 'server', change_type: 'updated' }),
      ]);
      const page = async (after?: Record<string, unknown>) => {
        const composite = {
          size: 2,
          sources: [{ type: { terms: { field: 'ci_type' } } }, { change: { terms: { field: 'change_type' } } }],
          ...(after && { after }),
        };
        const { body }: any = await client.search({
          index: INDEX,
          body: { size: 0, aggs: { pairs: { composite } } } as any,
        });
        return body.aggregations.pairs;
      };
      const first = await page();
      expect(first.buckets).to.deep.equal([
        { key: { type: 'database', change: 'updated' }, doc_count: 1 },
        { key: { type: 'server', change: 'created' }, doc_count: 1 },
      ]);
      expect(first.after_key).to.deep.equal({ type: 'server', change: 'created' });
      const second = await page(first.after_key);
      expect(second.buckets).to.deep.equal([{ key: { type: 'server', change: 'updated' }, doc_count: 2 }]);
      const third = await page(second.after_key);
      expect(third).to.deep.equal({ buckets: [] });
    });
  });

  it('the fake records every request with method, path, query and parsed body', async () => {
    await client.indices.putIndexTemplate({ name: 'cinv-changes', body: template });
    await client.bulk({ body: indexLines(INDEX, [changeRecord(1)]), refresh: 'wait_for' });
    await client.search({ index: INDEX, body: { query: { match_all: {} } } });
    expect(fake.requests).to.deep.equal([
      { method: 'POST', path: '/_index_template/cinv-changes', query: {}, body: template },
      { method: 'POST', path: '/_bulk', query: { refresh: 'wait_for' }, body: indexLines(INDEX, [changeRecord(1)]) },
      { method: 'POST', path: `/${INDEX}/_search`, query: {}, body: { query: { match_all: {} } } },
    ]);
  });
});
