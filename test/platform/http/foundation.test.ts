import { expect } from 'chai';
import { connect } from 'node:net';
import { apiRoutes } from '../../../src/app.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';

function expectEnvelope(body: any, status: { code: string; path: string; method: string }) {
  expect(body).to.have.all.keys('error');
  expect(body.error).to.have.all.keys('id', 'code', 'message', 'details', 'path', 'method');
  expect(body.error).to.include(status);
  expect(body.error.id).to.match(/^[0-9a-f-]{36}$/);
  expect(body.error.details).to.be.an('object');
}

/** Sends bytes as they are (methods fetch refuses, requests Node's parser refuses) and reads the answer. */
function rawRequest(
  baseUrl: string,
  text: string,
): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      answer += chunk;
      const end = answer.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(answer.slice(0, end));
      if (end === -1 || !length || answer.length < end + 4 + Number(length[1])) return;
      socket.destroy();
      const [statusLine, ...lines] = answer.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(answer.slice(end + 4)) });
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`connection closed after: ${answer.slice(0, 300)}`)));
  });
}

describe('HTTP foundation', () => {
  const app = useTestApp({ bodyLimitBytes: 4096 });
  let admin: string;
  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  it('answers an unknown route with the 404 envelope', async () => {
    const reply = await app.current.get('/api/v1/nothing-here', admin);
    expect(reply.status).to.equal(404);
    expectEnvelope(reply.body, { code: 'HTTP_404', path: '/api/v1/nothing-here', method: 'GET' });
  });

  it('reaches a route through a path in another case or with a trailing slash, and a path that only starts like one is a 404', async () => {
    for (const path of ['/API/V1/Configuration-Items', '/api/v1/configuration-items/', '/api/v1/SOURCES']) {
      const reply = await app.current.get(path, admin);
      expect(reply.status, path).to.equal(200);
      expect(reply.body, path).to.have.property('items');
    }
    for (const path of [
      '/api/v1/',
      '/api/v1/configuration-items-x',
      '/api/v1/configuration-items%2F',
      '/api/v2/configuration-items',
    ]) {
      const reply = await app.current.get(path, admin);
      expect(reply.status, path).to.equal(404);
      expectEnvelope(reply.body, { code: 'HTTP_404', path, method: 'GET' });
    }
    const health = await app.current.get('/health');
    expect(health.status).to.equal(200);
  });

  it('answers a known path with the wrong method with 405 and Allow', async () => {
    const reply = await app.current.request('PUT', '/api/v1/configuration-items', { key: admin });
    expect(reply.status).to.equal(405);
    expectEnvelope(reply.body, { code: 'HTTP_405', path: '/api/v1/configuration-items', method: 'PUT' });
    expect(reply.headers.get('allow')).to.include('GET');
  });

  it('answers TRACE, CONNECT and other methods no route serves with 405 and Allow, or 404 on an unknown path', async () => {
    const path = '/api/v1/configuration-items';
    for (const method of ['TRACE', 'CONNECT', 'PROPFIND', 'LINK']) {
      const reply = await rawRequest(
        app.current.baseUrl,
        `${method} ${path} HTTP/1.1\r\nHost: cinv\r\nX-API-Key: ${admin}\r\n\r\n`,
      );
      expect(reply.status, method).to.equal(405);
      expectEnvelope(reply.body, { code: 'HTTP_405', path, method });
      expect(reply.headers.allow, method).to.equal('HEAD, GET');
      expect(reply.body.error.details.allowed).to.deep.equal(['HEAD', 'GET']);
    }
    const unknown = await rawRequest(app.current.baseUrl, 'TRACE /api/v1/nothing-here HTTP/1.1\r\nHost: cinv\r\n\r\n');
    expect(unknown.status).to.equal(404);
    expectEnvelope(unknown.body, { code: 'HTTP_404', path: '/api/v1/nothing-here', method: 'TRACE' });
    // a proxy's tunnel request names no path of this server
    const tunnel = await rawRequest(
      app.current.baseUrl,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    );
    expect(tunnel.status).to.equal(405);
    expectEnvelope(tunnel.body, { code: 'HTTP_405', path: 'example.com:443', method: 'CONNECT' });
  });

  it('names the path and method of requests the HTTP parser refuses', async () => {
    const cases: [string, number, string, string][] = [
      [
        `GET /api/v1/configuration-items?api_key=x HTTP/1.1\r\nHost: cinv\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
        431,
        'GET',
        '/api/v1/configuration-items',
      ],
      ['POST /api/v1/sources HTTP/1.1\r\nHost: cinv\r\nContent-Length: many\r\n\r\n', 400, 'POST', '/api/v1/sources'],
      ['GET /api/v1/changes HTTP/1.1\r\nBad Header: x\r\n\r\n', 400, 'GET', '/api/v1/changes'],
      [
        `GET /api/v1/${'long/'.repeat(4000)} HTTP/1.1\r\nHost: cinv\r\n\r\n`,
        431,
        'GET',
        `/api/v1/${'long/'.repeat(4000)}`.slice(0, 2048),
      ],
    ];
    for (const [request, status, method, path] of cases) {
      const reply = await rawRequest(app.current.baseUrl, request);
      expect(reply.status, request.slice(0, 60)).to.equal(status);
      expectEnvelope(reply.body, { code: `HTTP_${status}`, path, method });
    }
  });

  it('refuses a key in the query string even when the header carries a valid one, and logs neither', async () => {
    await ingest(app.current.sql, [buildPod()]);
    const other = await createKey(app.current.sql, 'ro');
    for (const name of ['api_key', 'API_KEY', 'key', 'Key', 'token', 'x-api-key', 'X-Api-Key', 'access_token']) {
      for (const headerKey of [admin, undefined]) {
        const reply = await app.current.get(`/api/v1/configuration-items?${name}=${other}`, headerKey);
        expect(reply.status, `${name} header=${headerKey !== undefined}`).to.equal(401);
        expectEnvelope(reply.body, { code: 'HTTP_401', path: '/api/v1/configuration-items', method: 'GET' });
        expect(reply.body.error.details.reason).to.match(/only in the X-API-Key header, never as a query parameter/);
        expect(reply.body.error.details.parameter).to.equal(name.toLowerCase());
        expect(reply.text).to.not.include(other);
      }
    }
    const written = await app.current.request(
      'POST',
      `/api/v1/sources/${await buildSource(app.current.sql)}/ingest?token=${other}`,
      { key: admin, body: { items: [] } },
    );
    expect(written.status).to.equal(401);
    expect(app.current.logs.join('\n')).to.not.include(other.slice(9, 30));
    // parameters that merely contain such a word are ordinary parameters
    expect((await app.current.get('/api/v1/configuration-items?filter=name:eq:token', admin)).status).to.equal(200);
  });

  it('answers a body over the limit with 413', async () => {
    const sourceId = await buildSource(app.current.sql);
    const items = Array.from({ length: 40 }, (_, i) => buildPod({ name: `big-${i}` }));
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key: admin,
      body: { items },
    });
    expect(reply.status).to.equal(413);
    expectEnvelope(reply.body, { code: 'HTTP_413', path: `/api/v1/sources/${sourceId}/ingest`, method: 'POST' });
    expect(await app.current.sql`select 1 from configuration_items`).to.have.lengthOf(0);
  });

  it('answers malformed JSON with 400 and a non-JSON body with 415', async () => {
    const sourceId = await buildSource(app.current.sql);
    const path = `/api/v1/sources/${sourceId}/ingest`;
    const malformed = await app.current.request('POST', path, {
      key: admin,
      rawBody: '{"items": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).to.equal(400);
    expectEnvelope(malformed.body, { code: 'HTTP_400', path, method: 'POST' });
    expect(malformed.body.error.message).to.equal('Malformed JSON body');
    const text = await app.current.request('POST', path, {
      key: admin,
      rawBody: 'items',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).to.equal(415);
    expectEnvelope(text.body, { code: 'HTTP_415', path, method: 'POST' });
  });

  it('lists parameter failures under details.errors as 422 VALIDATION_ERROR', async () => {
    const reply = await app.current.get('/api/v1/configuration-items?limit=1001&offset=1.5&status=gone', admin);
    expect(reply.status).to.equal(422);
    expectEnvelope(reply.body, { code: 'VALIDATION_ERROR', path: '/api/v1/configuration-items', method: 'GET' });
    const fields = (reply.body.error.details.errors as { field: string; location: string }[]).map((e) => e.field);
    expect(fields).to.include.members(['limit', 'offset', 'status']);
    expect(reply.body.error.details.errors.every((e: { location: string }) => e.location === 'query')).to.equal(true);
    const zero = await app.current.get('/api/v1/configuration-items?limit=0', admin);
    expect(zero.status).to.equal(422);
  });

  it('validates ingest bodies field by field without writing anything', async () => {
    const sourceId = await buildSource(app.current.sql);
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
      key: admin,
      body: { items: [{ ...buildPod(), ci_type: 'pod' }], mode: 'full' },
    });
    expect(reply.status).to.equal(422);
    const fields = (reply.body.error.details.errors as { field: string }[]).map((e) => e.field);
    expect(fields).to.include.members(['items.0.ci_type', 'mode']);
    expect(await app.current.sql`select 1 from configuration_items`).to.have.lengthOf(0);
  });

  it('hides internal failures behind INTERNAL_SERVER_ERROR and logs the same error id', async () => {
    await ingest(app.current.sql, [buildPod()]);
    await app.current.sql`alter table ci_last_seen rename to ci_last_seen_away`;
    let reply;
    try {
      reply = await app.current.get('/api/v1/configuration-items', admin);
    } finally {
      await app.current.sql`alter table ci_last_seen_away rename to ci_last_seen`;
    }
    expect(reply.status).to.equal(500);
    expectEnvelope(reply.body, { code: 'INTERNAL_SERVER_ERROR', path: '/api/v1/configuration-items', method: 'GET' });
    expect(reply.body.error.message).to.equal('Internal server error');
    expect(reply.body.error.details).to.deep.equal({});
    expect(reply.text).to.not.match(/ci_last_seen|select|relation|at .*\.ts/i);
    const logged = app.current.logs
      .map((line) => JSON.parse(line))
      .find((entry) => entry.errorId === reply.body.error.id);
    expect(logged, 'log line with the error id').to.exist;
    expect(logged.level).to.equal(50);
    expect(JSON.stringify(logged)).to.match(/ci_last_seen/);
  });

  it('reports health with the database state', async () => {
    const reply = await app.current.get('/health');
    expect(reply.status).to.equal(200);
    expect(reply.body.status).to.equal('ok');
    expect(Date.parse(reply.body.timestamp)).to.be.closeTo(Date.now(), 60_000);
    expect(reply.body.checks.database.status).to.equal('ok');
  });

  it('publishes an OpenAPI 3.1 document covering every route', async () => {
    const reply = await app.current.get('/openapi.json');
    expect(reply.status).to.equal(200);
    const doc = reply.body;
    expect(doc.openapi).to.equal('3.1.0');
    expect(doc.components.securitySchemes.ApiKeyAuth).to.include({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(doc.components.securitySchemes.SessionCookie).to.include({
      type: 'apiKey',
      in: 'cookie',
      name: 'cinv_session',
    });
    for (const route of apiRoutes) {
      const op = doc.paths[route.path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).to.exist;
      if (route.access === 'public') {
        // signing in and out: reachable without credentials
        expect(route.path, 'only the sign-in routes are public').to.match(
          /^\/auth\/(login|callback|logout|methods|session)$/,
        );
        expect(op.security).to.deep.equal([]);
        continue;
      }
      expect(op.security).to.deep.equal([{ ApiKeyAuth: [] }, { SessionCookie: [] }]);
      expect(op.responses['401'].content['application/json'].schema.$ref).to.equal(
        '#/components/schemas/ErrorEnvelope',
      );
    }
    for (const path of ['/health', '/metrics', '/openapi.json', '/docs', '/redoc']) {
      expect(doc.paths[path]?.get?.security, path).to.deep.equal([]);
    }
    const list = doc.paths['/api/v1/configuration-items'].get;
    const limit = list.parameters.find((p: { name: string }) => p.name === 'limit');
    expect(limit).to.deep.include({ in: 'query', required: false });
    expect(limit.schema).to.include({ maximum: 1000, default: 50 });
    const filter = list.parameters.find((p: { name: string }) => p.name === 'filter');
    expect(filter).to.include({ style: 'form', explode: true });
  });

  it('declares the self-description as an object and every error status a route can answer', async () => {
    const doc = (await app.current.get('/openapi.json')).body;
    expect(doc.paths['/openapi.json'].get.responses['200'].content['application/json'].schema.type).to.equal('object');
    const statuses = (path: string, method = 'get') => Object.keys(doc.paths[path][method].responses).sort();
    expect(statuses('/api/v1/sources/{source_id}/ingest', 'post')).to.include.members([
      '200',
      '400',
      '401',
      '403',
      '404',
      '413',
      '415',
      '422',
      '500',
      '503',
    ]);
    for (const path of ['/api/v1/configuration-items', '/api/v1/changes']) {
      expect(statuses(path), path).to.include.members(['200', '400', '401', '403', '422', '500', '503']);
    }
    expect(statuses('/api/v1/changes')).to.include('406');
    // health and metrics are never shed; everything else may answer 503 with Retry-After
    expect(statuses('/health')).to.deep.equal(['200', '500', '503']);
    expect(statuses('/metrics')).to.not.include('503');
    const shed = doc.paths['/api/v1/configuration-items'].get.responses['503'];
    expect(shed.headers['Retry-After'].schema.type).to.equal('integer');
    expect(shed.content['application/json'].schema.$ref).to.equal('#/components/schemas/ErrorEnvelope');
  });

  it('serves Swagger UI and ReDoc from packaged assets, with no external URL', async () => {
    for (const page of ['/docs', '/redoc']) {
      const reply = await app.current.get(page);
      expect(reply.status).to.equal(200);
      expect(reply.headers.get('content-type')).to.match(/text\/html/);
      expect(reply.text).to.not.match(/https?:\/\//);
      const scripts = [...reply.text.matchAll(/src="([^"]+)"/g)].map((m) => m[1]!);
      expect(scripts.length).to.be.greaterThan(0);
      for (const script of scripts) {
        const asset = await fetch(app.current.baseUrl + script);
        expect(asset.status, script).to.equal(200);
        expect(asset.headers.get('content-type')).to.match(/javascript/);
        const text = await asset.text();
        expect(text.length).to.be.greaterThan(100_000);
        expect(text, script).to.not.include('cdn.redoc.ly');
      }
      expect(reply.headers.get('content-security-policy'), page).to.match(/default-src 'self'/);
    }
    expect((await app.current.get('/docs/assets/../../package.json')).status).to.equal(404);
  });

  it('exposes request, process, reconcile and change metrics', async () => {
    await ingest(app.current.sql, [buildPod()]);
    await app.current.get('/api/v1/configuration-items', admin);
    const reply = await app.current.get('/metrics');
    expect(reply.status).to.equal(200);
    expect(reply.text).to.match(
      /cinv_http_request_duration_seconds_bucket\{[^}]*method="GET"[^}]*route="\/api\/v1\/configuration-items"[^}]*status="200"/,
    );
    expect(reply.text).to.match(/^cinv_process_cpu_user_seconds_total \d/m);
    expect(reply.text).to.match(/^cinv_cis_reconciled_total\{outcome="created"\} [1-9]/m);
    expect(reply.text).to.match(/^cinv_changes_written_total [1-9]/m);
  });
});
