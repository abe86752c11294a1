import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import { apiRoutes } from '../../../src/app.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';

/** Inputs a client can send that once reached the database unchecked; none may cause a 500. */
describe('hostile and odd input', () => {
  const app = useTestApp();
  let key: string;
  let ciId: string;
  beforeEach(async () => {
    key = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [buildPod({ name: 'target' })]);
    ciId = await ciIdOf(app.current.sql, 'pod/default/target');
  });

  const paths = () => [
    '/api/v1/configuration-items?filter=name:eq:%00',
    '/api/v1/configuration-items?filter=raw_data.spec.replicas:gt:1e999999',
    '/api/v1/configuration-items?filter=raw_data.spec.replicas:eq:1e999999',
    '/api/v1/configuration-items?filter=created_at:gt:2026-02-30T00:00:00Z',
    '/api/v1/configuration-items?filter=created_at:gt:2026-13-01',
    '/api/v1/configuration-items?filter=raw_data.%00:eq:x',
    '/api/v1/configuration-items?filter=name:like:%5C',
    '/api/v1/configuration-items?filter=name:in:,,,',
    '/api/v1/configuration-items?filter=ci_type:eq:' + 'x'.repeat(20000),
    '/api/v1/configuration-items?include_attributes=%00',
    '/api/v1/configuration-items?include_attributes=a..b',
    '/api/v1/configuration-items?limit=99999999999999999999',
    '/api/v1/configuration-items?offset=-1',
    '/api/v1/configuration-items?offset=1e3',
    '/api/v1/configuration-items?sort_by[]=name',
    '/api/v1/configuration-items?status=active&status=all',
    '/api/v1/configuration-items/%E0%A4%A',
    `/api/v1/configuration-items/${ciId}%00`,
    `/api/v1/configuration-items/${ciId.toUpperCase()}`,
    '/docs/assets/__proto__',
    '/docs/assets/constructor',
    '/api/v1/configuration-items?filter=constructor:eq:x',
    '/api/v1/configuration-items?filter=__proto__.x:eq:1',
    '/api/v1/configuration-items?filter=constructor.name:eq:Object',
    '/api/v1/configuration-items?include_attributes=__proto__,constructor,metadata.__proto__',
    '/api/v1/configuration-items?__proto__=x&__proto__=y&constructor=z&hasOwnProperty=1',
    '/api/v1/configuration-items/x?__proto__[]=x',
    '/api/v1/changes?end_date=9999-12-31',
    `/api/v1/changes?filter=${encodeURIComponent('changed_at:lt:9999-12-31T23:59:59.999999+14:00')}`,
    '/api/v1/changes/stats?start_date=9999-12-31T23:59:59.999999Z',
    '/api/v1/changes/stats?end_date=9999-12-31&start_date=0001-01-01',
    '/api/v1/changes?filter=changed_at:gt:2016-12-31T23:59:60Z',
    '/api/v1/configuration-items?filter=created_at:gt:2016-12-31T23:59:60Z',
    '/api/v1/audit-events?start_date=2016-12-31T23:59:60Z',
  ];

  it('answers every odd query with a 4xx envelope or a 200, never a 500', async () => {
    for (const path of paths()) {
      const reply = await app.current.get(path, key);
      expect(reply.status, `${path.slice(0, 120)}: ${reply.text.slice(0, 300)}`).to.be.below(500);
      if (reply.status >= 400)
        expect(reply.body?.error?.code, `${path.slice(0, 120)}: ${reply.text.slice(0, 200)}`).to.be.a('string');
    }
  });

  it('refuses ingest bodies that PostgreSQL could not store, before writing anything', async () => {
    const sourceId = await buildSource(app.current.sql, 'odd');
    const nul = { ...buildPod({ name: 'nul' }), raw_data: { note: 'a\u0000b' } };
    const nulKey = { ...buildPod({ name: 'nul-key' }), raw_data: { deep: [{ ['k\u0000']: 1 }] } };
    // the six characters backslash, u, 0, 0, 0, 0 are text like any other
    const escaped = { ...buildPod({ name: 'escaped' }), raw_data: { note: 'literal \\u0000 text' } };
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      body: { items: [buildPod({ name: 'fine' }), nul, escaped, nulKey] },
    });
    expect(reply.status).to.equal(422);
    expect(reply.body.error.details.errors).to.deep.equal([
      { field: 'items.1', location: 'body', message: 'must not contain NUL characters (\\u0000)' },
      { field: 'items.3', location: 'body', message: 'must not contain NUL characters (\\u0000)' },
    ]);
    expect(await app.current.sql`select 1 from configuration_items where source_id = ${sourceId}`).to.have.lengthOf(0);

    // JSON's \u escapes carry unpaired surrogates, which no database text holds; a pair is a character like any other
    const lone = { ...buildPod({ name: 'lone' }), external_id: 'pod/odd/\ud800x' };
    const loneKey = { ...buildPod({ name: 'lone-key' }), raw_data: { labels: { ['k\udc00']: 'v' } } };
    const paired = { ...buildPod({ name: 'paired' }), raw_data: { note: 'rocket \ud83d\ude80' } };
    const surrogates = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      body: { items: [paired, lone, loneKey] },
    });
    expect(surrogates.status, surrogates.text).to.equal(422);
    expect(surrogates.body.error.details.errors.map((e: { field: string }) => e.field)).to.deep.equal([
      'items.1',
      'items.2',
    ]);
    expect(surrogates.body.error.details.errors[0].message).to.match(/valid Unicode/);
    expect(await app.current.sql`select 1 from configuration_items where source_id = ${sourceId}`).to.have.lengthOf(0);
    const stored = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      body: { items: [paired] },
    });
    expect(stored.body).to.deep.include({ created: 1 });
    const [rocket] = await app.current.sql<
      { note: string }[]
    >`select raw_data ->> 'note' as note from configuration_items where source_id = ${sourceId}`;
    expect(rocket!.note).to.equal('rocket \u{1F680}');

    // a bare JSON string is not a JSON document the strict parser accepts: malformed (400)
    const cases: [unknown, number][] = [
      [[], 422],
      ['text', 400],
      [{ items: 'x' }, 422],
      [{ items: [null] }, 422],
      [{ items: [{ ...buildPod(), external_id: '' }] }, 422],
      [{ items: [], extra: 1 }, 422],
    ];
    for (const [body, status] of cases) {
      const odd = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, { key, body });
      expect(odd.status, JSON.stringify(body)).to.equal(status);
    }
    const unknownSource = await app.current.request('POST', '/api/v1/sources/999999999999/ingest', {
      key,
      body: { items: [] },
    });
    expect(unknownSource.status).to.equal(404);
    const hugeId = await app.current.request('POST', '/api/v1/sources/99999999999999999999999/ingest', {
      key,
      body: { items: [] },
    });
    expect(hugeId.status).to.be.within(400, 499);
  });

  it('treats keys named after Object members as plain data (prototype names in paths, filters, types)', async () => {
    const listed = await app.current.get('/api/v1/configuration-items?include_attributes=__proto__,constructor', key);
    expect(listed.status).to.equal(200);
    expect(listed.body.items[0].attributes).to.deep.equal(JSON.parse('{"__proto__": null, "constructor": null}'));
    const sourceId = await buildSource(app.current.sql, 'protos');
    const odd = { ...buildPod({ name: 'proto' }), ci_type: 'constructor.pod', raw_data: { constructor: { x: 1 } } };
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      body: { items: [odd] },
    });
    expect(reply.status, reply.text).to.equal(200);
    const stored = await app.current.get(
      `/api/v1/configuration-items?filter=ci_type:eq:constructor.pod&include_attributes=constructor.x`,
      key,
    );
    expect(stored.body.items[0].attributes).to.deep.equal({ 'constructor.x': 1 });
    // a `__proto__` key is refused by the parser, with a message that says so
    const polluting = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      rawBody: `{"items": [{"external_id": "p", "ci_type": "k8s.pod", "name": "p", "raw_data": {"__proto__": {"x": 1}}}]}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(polluting.status).to.equal(400);
    expect(polluting.body.error.message).to.equal('JSON body contains a "__proto__" key, which is not accepted');
  });

  it('refuses JSON nested 10 000 levels deep with a 400, before anything walks it', async () => {
    const sourceId = await buildSource(app.current.sql, 'deep');
    const deep = '{"items":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}';
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      rawBody: deep,
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status, reply.text).to.equal(400);
    expect(reply.body.error).to.include({ code: 'HTTP_400', message: 'JSON body nested deeper than 64 levels' });
    // a document at the limit is read and validated as usual
    let nested: unknown = 1;
    for (let depth = 1; depth < 62; depth++) nested = { n: nested };
    const atLimit = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key,
      body: { items: [{ ...buildPod({ name: 'nested' }), raw_data: nested }] },
    });
    expect(atLimit.status, atLimit.text).to.equal(200);
  });

  it('answers bodies whose Content-Encoding does not match their bytes with a 400, and unknown encodings with a 415', async () => {
    const sourceId = await buildSource(app.current.sql, 'encoded');
    const path = `/api/v1/sources/${sourceId}/ingest`;
    const notGzip = await app.current.request('POST', path, {
      key,
      rawBody: '{"items":[]}',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(notGzip.status, notGzip.text).to.equal(400);
    expect(notGzip.body.error).to.include({ code: 'HTTP_400', message: 'Malformed compressed body' });
    const notBrotli = await app.current.request('POST', path, {
      key,
      rawBody: '{"items":[]}',
      headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
    });
    expect(notBrotli.status, notBrotli.text).to.equal(400);
    const unknown = await app.current.request('POST', path, {
      key,
      rawBody: '{"items":[]}',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd-nope' },
    });
    expect(unknown.status, unknown.text).to.equal(415);
    expect(unknown.body.error.code).to.equal('HTTP_415');
    // a real gzip body is read
    const response = await fetch(app.current.baseUrl + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-api-key': key },
      body: gzipSync(JSON.stringify({ items: [buildPod({ name: 'zipped' })] })),
    });
    expect(response.status).to.equal(200);
    expect(((await response.json()) as { created: number }).created).to.equal(1);
  });

  it('refuses bodies that are not valid UTF-8 with a 400 rather than storing replacement characters', async () => {
    const sourceId = await buildSource(app.current.sql, 'bytes');
    const path = `/api/v1/sources/${sourceId}/ingest`;
    const record = (name: string) =>
      Buffer.from(JSON.stringify({ items: [{ ...buildPod({ name }), raw_data: { note: 'BYTE' } }] }));
    // a lone continuation byte, an overlong encoding of "/", a truncated sequence, an encoded surrogate
    for (const bad of [[0x80], [0xc0, 0xaf], [0xe2, 0x82], [0xed, 0xa0, 0x80]]) {
      const [before, after] = record(`bad-${bad[0]}`).toString('latin1').split('BYTE');
      const body = Buffer.concat([Buffer.from(before!, 'latin1'), Buffer.from(bad), Buffer.from(after!, 'latin1')]);
      for (const gzip of [false, true]) {
        const response = await fetch(app.current.baseUrl + path, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': key,
            ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          },
          body: gzip ? gzipSync(body) : body,
        });
        const reply = (await response.json()) as {
          error: { code: string; message: string; path: string; method: string };
        };
        expect(response.status, `${bad.join(',')} gzip=${gzip}: ${JSON.stringify(reply)}`).to.equal(400);
        expect(reply.error).to.include({
          code: 'HTTP_400',
          message: 'JSON body is not valid UTF-8; send the text encoded as UTF-8',
          path,
          method: 'POST',
        });
      }
    }
    expect(await app.current.sql`select 1 from configuration_items where source_id = ${sourceId}`).to.have.lengthOf(0);
    // text in any script, a byte order mark and four-byte characters are UTF-8 like any other
    const fine = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from(JSON.stringify({ items: [{ ...buildPod({ name: 'ünïcødé-名前-😀' }), raw_data: {} }] })),
    ]);
    const stored = await fetch(app.current.baseUrl + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: fine,
    });
    expect(stored.status).to.equal(200);
    const [ci] = await app.current.sql<
      { name: string }[]
    >`select name from configuration_items where source_id = ${sourceId}`;
    expect(ci!.name).to.equal('ünïcødé-名前-😀');
  });

  it('refuses an NDJSON line that is not valid UTF-8 with a 400 naming the line', async () => {
    const sourceId = await buildSource(app.current.sql, 'ndjson-bytes');
    const good = JSON.stringify({ ...buildPod({ name: 'good' }), raw_data: {} });
    const [before, after] = JSON.stringify({ ...buildPod({ name: 'bad' }), raw_data: { note: 'BYTE' } }).split('BYTE');
    const body = Buffer.concat([
      Buffer.from(`${good}\n\n`),
      Buffer.from(before!),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`${after!}\n`),
    ]);
    for (const gzip of [false, true]) {
      const response = await fetch(`${app.current.baseUrl}/api/v1/sources/${sourceId}/ingest`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-ndjson',
          'x-api-key': key,
          ...(gzip ? { 'content-encoding': 'gzip' } : {}),
        },
        body: gzip ? gzipSync(body) : body,
      });
      const reply = (await response.json()) as {
        error: { code: string; message: string; details: Record<string, unknown> };
      };
      expect(response.status, JSON.stringify(reply)).to.equal(400);
      expect(reply.error.code).to.equal('HTTP_400');
      expect(reply.error.message).to.match(/^NDJSON line 2 .*not valid UTF-8/);
      expect(reply.error.details).to.deep.equal({ field: 'items.2', line: 2 });
    }
    const names = await app.current.sql<
      { name: string }[]
    >`select name from configuration_items where source_id = ${sourceId}`;
    expect(names.map((n) => n.name)).to.not.include('bad');
  });

  it('takes integer parameters in plain decimal digits only, on every route that has them', async () => {
    const integerParameters = (schema: any): string[] =>
      Object.entries((schema?.properties ?? {}) as Record<string, { type?: string }>)
        .filter(([, p]) => p.type === 'integer')
        .map(([name]) => name);
    const routes = apiRoutes.filter((route) => route.method === 'GET' && integerParameters(route.query).length > 0);
    expect(routes.map((r) => r.path)).to.include.members([
      '/api/v1/configuration-items',
      '/api/v1/changes',
      '/api/v1/ci-changes/{ci_id}',
      '/api/v1/sources',
      '/api/v1/audit-events',
    ]);
    const odd = ['1e3', '0x10', '+5', '%205', '5%20', '5.0', '1_000', '0b1', '0o7', '%D9%A1', '-5', 'Infinity', ''];
    for (const route of routes) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) =>
        name === 'measure'
          ? 'completeness'
          : name.endsWith('_id') && name !== 'ci_id' && name !== 'user_id' && name !== 'team_id'
            ? '1'
            : ciId,
      );
      for (const name of integerParameters(route.query)) {
        for (const value of odd) {
          const reply = await app.current.get(`${path}?${name}=${value}`, key);
          expect(reply.status, `${route.path}?${name}=${value}: ${reply.text.slice(0, 300)}`).to.equal(422);
          expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
          expect(reply.body.error.details.errors, `${route.path}?${name}=${value}`).to.deep.include({
            field: name,
            location: 'query',
            message: 'must be an integer written in decimal digits (such as 10)',
          });
        }
        const repeated = await app.current.get(`${path}?${name}=5&${name}=1e3`, key);
        expect(repeated.status, `${route.path}?${name}=5&${name}=1e3`).to.equal(422);
      }
    }
    const plain = await app.current.get('/api/v1/configuration-items?limit=05&offset=0', key);
    expect(plain.status, plain.text).to.equal(200);
    expect(plain.body).to.include({ limit: 5, offset: 0 });
  });

  it('validates numbers PostgreSQL cannot take (422) and answers ids beyond bigint with 404', async () => {
    for (const offset of ['Infinity', '1e400', '99999999999999999999999', '-0.5', '2147483648']) {
      const reply = await app.current.get(`/api/v1/configuration-items?offset=${offset}`, key);
      expect(reply.status, `offset=${offset}: ${reply.text}`).to.equal(422);
      expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
      expect(reply.body.error.details.errors[0].field).to.equal('offset');
    }
    for (const path of [
      '/api/v1/changes?limit=Infinity',
      '/api/v1/changes?offset=1e400',
      `/api/v1/ci-changes/${ciId}?offset=Infinity`,
    ]) {
      const reply = await app.current.get(path, key);
      expect(reply.status, `${path}: ${reply.text}`).to.equal(422);
    }
    for (const id of ['9223372036854775807', '9223372036854775808', '99999999999999999999999', '0']) {
      const reply = await app.current.request('POST', `/api/v1/sources/${id}/ingest`, { key, body: { items: [] } });
      expect(reply.status, `${id}: ${reply.text}`).to.equal(404);
      expect(reply.body.error).to.include({ code: 'HTTP_404' });
      expect(reply.body.error.details.source_id).to.equal(id);
    }
    const notANumber = await app.current.request('POST', '/api/v1/sources/12abc/ingest', { key, body: { items: [] } });
    expect(notANumber.status).to.equal(422);
  });

  it('refuses a leap second (23:59:60, valid RFC 3339 that no Date holds) with a 422 naming the parameter, wherever a time is taken', async () => {
    const takesTimes = (schema: unknown): string[] =>
      Object.entries(
        ((schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {}) as Record<string, unknown>,
      )
        .filter(([, property]) => JSON.stringify(property).includes('"date-time"'))
        .map(([name]) => name);
    const routes = apiRoutes.filter((route) => route.method === 'GET' && takesTimes(route.query).length > 0);
    expect(routes.map((r) => r.path)).to.include.members([
      '/api/v1/changes',
      '/api/v1/changes/search',
      '/api/v1/changes/stats',
      '/api/v1/audit-events',
      '/api/v1/configuration-items',
    ]);
    const leaps = ['2016-12-31T23:59:60Z', '2016-12-31T18:59:60-05:00', '2016-12-31T23:59:60.5Z'];
    const refusedNaming = (reply: { status: number; text: string; body: any }, field: string, what: string) => {
      expect(reply.status, `${what}: ${reply.text.slice(0, 300)}`).to.equal(422);
      expect(reply.body.error.code, what).to.equal('VALIDATION_ERROR');
      expect(
        reply.body.error.details.errors.map((e: { field: string }) => e.field),
        what,
      ).to.include(field);
    };
    for (const route of routes) {
      const path = route.path.replace('{ci_id}', ciId).replace('{identity_id}', ciId);
      for (const name of takesTimes(route.query)) {
        for (const leap of leaps) {
          const query = `${path}?${name}=${encodeURIComponent(leap)}`;
          refusedNaming(await app.current.get(query, key), name, query);
        }
      }
    }
    // the diffs take a time or a baseline's name, read apart
    for (const query of [
      `/api/v1/inventory/diff?from=${encodeURIComponent(leaps[0]!)}`,
      `/api/v1/configuration-items/${ciId}/diff?from=${encodeURIComponent(leaps[1]!)}`,
    ]) {
      refusedNaming(await app.current.get(query, key), 'from', query);
    }
    const inventoryTo = `/api/v1/inventory/diff?from=2016-01-01T00:00:00Z&to=${encodeURIComponent(leaps[0]!)}`;
    refusedNaming(await app.current.get(inventoryTo, key), 'to', inventoryTo);
    // and bodies: a baseline's moment, a key's expiry
    refusedNaming(
      await app.current.request('POST', '/api/v1/baselines', { key, body: { name: 'leap', at: leaps[0] } }),
      'at',
      'baseline',
    );
    refusedNaming(
      await app.current.request('POST', '/api/v1/api-keys', {
        key,
        body: { name: 'leap', tier: 'ro', expires_at: '2999-12-31T23:59:60Z' },
      }),
      'expires_at',
      'api key',
    );
    // the second before and the one after are ordinary times
    expect(
      (
        await app.current.get(
          `/api/v1/changes?start_date=${encodeURIComponent('2016-12-31T23:59:59.999Z')}&end_date=2017-01-01T00:00:00Z`,
          key,
        )
      ).status,
    ).to.equal(200);
  });
});
