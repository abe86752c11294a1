import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiRoutes } from '../../../src/app.js';
import { guardedGet } from '../../../src/platform/net/guarded-http.js';
import type { CollectContext } from '../../../src/collection/types/plugin.js';
import { registerCollectorType, unregisterCollectorType } from '../../../src/collection/types/registry.js';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import {
  decryptCredentials,
  encryptCredentials,
  loadCredentials,
  MasterKeys,
  rotateMasterKey,
  storeCredentials,
} from '../../../src/collection/sources/credentials.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, TEST_MASTER_KEY, useTestApp } from '../../support/app.js';
import { buildPod } from '../../support/factories.js';

const SOURCES = '/api/v1/sources';

describe('source credentials', () => {
  const app = useTestApp();
  let admin: string;
  let sourceId: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    const created = await app.current.request('POST', SOURCES, {
      key: admin,
      body: { name: 'prod', collector_type: 'universal', endpoint: 'https://10.0.0.1' },
    });
    sourceId = String(created.body.id);
  });

  const keys = () => new MasterKeys(Buffer.from(TEST_MASTER_KEY, 'hex'));
  const put = (body: unknown, key = admin) =>
    app.current.request('PUT', `${SOURCES}/${sourceId}/credentials`, { key, body });
  const reveal = (key = admin) => app.current.get(`${SOURCES}/${sourceId}/credentials/reveal`, key);

  it('stores them encrypted, reveals them to whoever holds credentials:read, and audits every reveal and refusal', async () => {
    const document = { type: 'basic', username: 'collector', password: 'pa55-w0rd-canary' };
    expect((await put(document)).status).to.equal(204);
    const [stored] = await app.current.sql<
      { ciphertext: Buffer; nonce: Buffer }[]
    >`select ciphertext, nonce from source_credentials`;
    expect(stored!.ciphertext.toString('latin1')).to.not.include('pa55-w0rd-canary');
    expect(stored!.nonce).to.have.length(12);

    const detail = await app.current.get(`${SOURCES}/${sourceId}`, admin);
    expect(detail.body.credentials.type).to.equal('basic');
    expect(detail.text).to.not.include('pa55');

    const revealed = await reveal();
    expect(revealed.status).to.equal(200);
    expect(revealed.body).to.deep.equal(document);
    expect(revealed.headers.get('cache-control')).to.equal('no-store');
    const readOnly = await createKey(app.current.sql, 'ro', { name: 'dashboards' });
    const denied = await reveal(readOnly);
    expect(denied.status).to.equal(403);

    await app.current.context.audit.flush();
    const events = await app.current.sql<
      {
        event_type: string;
        actor_name: string;
        request_id: string | null;
        target_type: string | null;
        target_id: string | null;
        target_name: string | null;
      }[]
    >`
      select event_type, actor_name, request_id, target_type, target_id, target_name from audit_events where event_type like 'credentials.%' order by id`;
    expect(events.map((e) => e.event_type)).to.deep.equal(['credentials.revealed', 'credentials.reveal_denied']);
    expect(events[1]).to.deep.include({ actor_name: 'dashboards', request_id: denied.body.error.id });
    // the refusal names the source whose credentials were asked for, as the reveal does
    expect(events[1]).to.deep.include({ target_type: 'source', target_id: sourceId, target_name: 'prod' });
    expect(events[0]).to.deep.include({ target_type: 'source', target_id: sourceId });
    // a source that does not exist is named as asked
    expect((await app.current.get(`${SOURCES}/999999/credentials/reveal`, readOnly)).status).to.equal(403);
    await app.current.context.audit.flush();
    const [unknown] = await app.current.sql<
      { target_type: string | null; target_id: string | null; target_name: string | null }[]
    >`
      select target_type, target_id, target_name from audit_events where event_type = 'credentials.reveal_denied' order by id desc limit 1`;
    expect(unknown).to.deep.equal({ target_type: 'source', target_id: '999999', target_name: null });

    expect((await put({ type: 'token', token: 'replacement' })).status).to.equal(204);
    expect((await reveal()).body).to.deep.equal({ type: 'token', token: 'replacement' });
    expect((await app.current.request('DELETE', `${SOURCES}/${sourceId}/credentials`, { key: admin })).status).to.equal(
      204,
    );
    expect((await reveal()).status).to.equal(404);
  });

  it('are handled only by principals holding the whole source: a key of one instance gets an audited 403 and changes nothing', async () => {
    await put({ type: 'token', token: 'serves-every-instance' });
    const every = ['credentials:read', 'credentials:write', 'credentials:delete', 'sources:read'] as const;
    const instance = await createKey(app.current.sql, 'svc', {
      name: 'one-instance',
      permissions: [...every],
      scopes: [{ sourceId, scopeId: 'pa' }],
    });
    const stored = () =>
      app.current.sql<
        { ciphertext: Buffer }[]
      >`select ciphertext from source_credentials where source_id = ${sourceId}`;
    const before = (await stored())[0]!.ciphertext;

    const replaced = await put({ type: 'token', token: 'taken-over' }, instance);
    expect(replaced.status).to.equal(403);
    expect(replaced.body.error.details).to.deep.include({ reason: 'whole_source_required', source_id: sourceId });
    const revealed = await reveal(instance);
    expect(revealed.status).to.equal(403);
    expect(revealed.text).to.not.include('serves-every-instance');
    const removed = await app.current.request('DELETE', `${SOURCES}/${sourceId}/credentials`, { key: instance });
    expect(removed.status).to.equal(403);
    expect((await stored())[0]!.ciphertext.equals(before)).to.equal(true);
    expect((await reveal()).body).to.deep.equal({ type: 'token', token: 'serves-every-instance' });

    await app.current.context.audit.flush();
    const refusals = await app.current.sql<
      { event_type: string; details: { reason?: string }; target_id: string | null; target_name: string | null }[]
    >`
      select event_type, details, target_id, target_name from audit_events where actor_name = 'one-instance' and outcome = 'failure' order by id`;
    expect(refusals.map((e) => [e.event_type, e.details.reason])).to.deep.equal([
      ['permission.denied', 'whole_source_required'],
      ['credentials.reveal_denied', 'whole_source_required'],
      ['permission.denied', 'whole_source_required'],
    ]);
    expect(refusals[1]).to.deep.include({ target_id: sourceId, target_name: 'prod' });

    const whole = await createKey(app.current.sql, 'svc', {
      name: 'whole-source',
      permissions: [...every],
      scopes: [{ sourceId, scopeId: null }],
    });
    expect((await put({ type: 'token', token: 'by-the-whole-source' }, whole)).status).to.equal(204);
    expect((await reveal(whole)).body).to.deep.equal({ type: 'token', token: 'by-the-whole-source' });
  });

  it('refuses malformed credentials with a 422 and keeps the stored ones', async () => {
    await put({ type: 'token', token: 'keep-me' });
    expect((await put({ type: 'basic', username: 'x' })).status).to.equal(422);
    expect((await put({ type: 'tls', client_certificate: 'pem' })).status).to.equal(422);
    expect((await put({ type: 'ssh', key: 'x' })).status).to.equal(422);
    expect((await reveal()).body).to.deep.equal({ type: 'token', token: 'keep-me' });
  });

  it('destroys the credentials with the source, keeping its CIs', async () => {
    await put({ type: 'token', token: 'gone-with-the-source' });
    await app.current.request('POST', `${SOURCES}/${sourceId}/ingest`, {
      key: admin,
      body: { items: [buildPod({ name: 'kept' })] },
    });
    expect((await app.current.request('DELETE', `${SOURCES}/${sourceId}`, { key: admin })).status).to.equal(200);
    expect((await app.current.sql`select count(*)::int as n from source_credentials`)[0]!.n).to.equal(0);
    expect((await app.current.get('/api/v1/configuration-items', admin)).body.total).to.equal(1);
  });

  it('binds each ciphertext to its tenant, source and key version: copied anywhere else it does not decrypt', async () => {
    const sql = app.current.sql;
    const other = await app.current.request('POST', SOURCES, {
      key: admin,
      body: { name: 'other', collector_type: 'universal' },
    });
    const sealed = await encryptCredentials(sql, keys(), DEFAULT_TENANT_ID, sourceId, { type: 'token', token: 't' });
    expect(await decryptCredentials(sql, keys(), DEFAULT_TENANT_ID, sourceId, sealed)).to.deep.equal({
      type: 'token',
      token: 't',
    });
    await expectRefusal(decryptCredentials(sql, keys(), DEFAULT_TENANT_ID, String(other.body.id), sealed));

    const tenantB = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantB}, ${`b-${tenantB.slice(0, 8)}`}, 'B')`;
    await encryptCredentials(sql, keys(), tenantB, sourceId, { type: 'token', token: 'b' });
    await expectRefusal(decryptCredentials(sql, keys(), tenantB, sourceId, sealed));

    // a second data key version: the ciphertext relabelled with it fails
    const dataKey = randomBytes(32);
    const { wrapped, fingerprint } = keys().wrap(DEFAULT_TENANT_ID, 2, dataKey);
    await sql`insert into tenant_data_keys (tenant_id, version, wrapped, master_fingerprint) values (${DEFAULT_TENANT_ID}, 2, ${wrapped}, ${fingerprint})`;
    await expectRefusal(decryptCredentials(sql, keys(), DEFAULT_TENANT_ID, sourceId, { ...sealed, keyVersion: 2 }));
    // and another master key opens nothing
    await expectRefusal(decryptCredentials(sql, new MasterKeys(randomBytes(32)), DEFAULT_TENANT_ID, sourceId, sealed));
  });

  it('never repeats a nonce across 10 000 encryptions', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const sealed = await encryptCredentials(app.current.sql, keys(), DEFAULT_TENANT_ID, sourceId, {
        type: 'token',
        token: 'same',
      });
      seen.add(sealed.nonce.toString('hex'));
    }
    expect(seen.size).to.equal(10_000);
  });

  it('re-wraps the data keys under a new master key without touching the ciphertexts, resumably', async () => {
    const sql = app.current.sql;
    const old = keys();
    await storeCredentials(
      sql,
      old,
      DEFAULT_TENANT_ID,
      sourceId,
      { type: 'token', token: 'survives rotation' },
      new Date(),
    );
    const tenantB = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantB}, ${`r-${tenantB.slice(0, 8)}`}, 'R')`;
    await encryptCredentials(sql, old, tenantB, sourceId, { type: 'token', token: 'x' });
    const [before] = await sql<{ ciphertext: Buffer }[]>`select ciphertext from source_credentials`;

    const fresh = randomBytes(32);
    // only the new key: the old data keys cannot be opened until they are re-wrapped
    await expectRefusal(loadCredentials(sql, new MasterKeys(fresh), DEFAULT_TENANT_ID, sourceId));
    const rotating = new MasterKeys(fresh, Buffer.from(TEST_MASTER_KEY, 'hex'));
    // an interrupted rotation: one tenant's key re-wrapped by hand, the run continues with the rest
    const [first] = await sql<{ tenant_id: string; version: number; wrapped: Buffer; master_fingerprint: string }[]>`
      select * from tenant_data_keys where tenant_id = ${DEFAULT_TENANT_ID}`;
    const rewrapped = rotating.wrap(
      DEFAULT_TENANT_ID,
      first!.version,
      rotating.unwrap(DEFAULT_TENANT_ID, first!.version, first!.wrapped, first!.master_fingerprint),
    );
    await sql`update tenant_data_keys set wrapped = ${rewrapped.wrapped}, master_fingerprint = ${rewrapped.fingerprint} where tenant_id = ${DEFAULT_TENANT_ID}`;
    const heard: [number, number][] = [];
    expect(await rotateMasterKey(sql, rotating, (done, total) => heard.push([done, total]))).to.deep.equal({
      rewrapped: 1,
      remaining: 0,
    });
    expect(heard, 'the progress of the one key left').to.deep.equal([[1, 1]]);
    expect(await rotateMasterKey(sql, rotating)).to.deep.equal({ rewrapped: 0, remaining: 0 });

    const [after] = await sql<{ ciphertext: Buffer }[]>`select ciphertext from source_credentials`;
    expect(after!.ciphertext.equals(before!.ciphertext)).to.equal(true);
    expect(await loadCredentials(sql, new MasterKeys(fresh), DEFAULT_TENANT_ID, sourceId)).to.deep.equal({
      type: 'token',
      token: 'survives rotation',
    });
  });

  it('answers 409 when the server has no master key', async () => {
    const config = app.current.context.config;
    const saved = config.masterKey;
    config.masterKey = undefined;
    try {
      const refused = await put({ type: 'token', token: 'x' });
      expect(refused.status).to.equal(409);
      expect(refused.body.error.details).to.deep.include({ reason: 'master_key_missing' });
    } finally {
      config.masterKey = saved;
    }
  });

  it('never shows a planted secret in any response of any route, nor in the log', async () => {
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    await put({
      type: 'tls',
      client_certificate: `cert-${canary}`,
      client_key: `key-${canary}`,
      ca_certificate: `ca-${canary}`,
    });
    await put({ type: 'basic', username: `user-${canary}`, password: canary });
    // the reveal route is the one that shows it (the walk below deletes the source at some point)
    expect((await reveal()).text).to.include(canary);
    const [source] = await app.current.sql<
      { collector_id: string }[]
    >`select collector_id::text from sources where id = ${sourceId}`;
    const ids: Record<string, string> = { source_id: sourceId, collector_id: source!.collector_id };
    const bodies: string[] = [];
    for (const route of apiRoutes) {
      if (route.path.endsWith('/credentials/reveal')) continue;
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? randomUUID());
      for (const accept of ['application/json', 'text/csv']) {
        const reply = await app.current.request(route.method, path, {
          key: admin,
          body: route.body ? {} : undefined,
          headers: { accept },
        });
        bodies.push(`${route.method} ${path} ${reply.status} ${reply.text}`);
      }
    }
    const leaks = bodies.filter((text) => text.includes(canary));
    expect(leaks).to.deep.equal([]);
    expect(app.current.logs.filter((line) => line.includes(canary))).to.deep.equal([]);
    expect(bodies.length).to.equal(apiRoutes.length * 2 - 2);
  });
});

/**
 * A collector type as careless as a real one might be: it sends the credentials to its endpoint
 * and, when the server refuses, quotes the server's answer in its error, or fails inside TLS with
 * the key material it was given.
 */
async function* echoingCollect(context: CollectContext) {
  const credentials = context.credentials;
  const headers: Record<string, string> = {};
  if (credentials?.type === 'token') headers.authorization = `Bearer ${credentials.token}`;
  if (credentials?.type === 'basic')
    headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  const tls =
    credentials?.type === 'tls'
      ? { cert: credentials.client_certificate, key: credentials.client_key, ca: credentials.ca_certificate }
      : undefined;
  const url = tls ? context.source.endpoint!.replace('http:', 'https:') : context.source.endpoint!;
  const reply = await guardedGet(url, { allowedHosts: context.allowedHosts, signal: context.signal, headers, tls });
  if (reply.status !== 200)
    throw new Error(
      `${url} answered ${reply.status}: ${reply.body.toString('utf8')}; sent ${JSON.stringify(credentials)}`,
    );
  yield { scopeId: null, records: [] };
}

describe('source credentials in failing collections (with a test collector type)', () => {
  const app = useTestApp();
  let server: Server;
  let endpoint: string;

  before(async () => {
    registerCollectorType({
      type: 'test-echo',
      description: 'sends its credentials to a server that echoes them (tests only)',
      configSchema: Type.Object({}),
      capabilities: {
        supports_universal_format: false,
        supports_multi_source: true,
        supports_watch: false,
        collects: true,
      },
      collectables: [],
      endpointSchemes: ['http', 'https'],
      collect: echoingCollect,
    });
    // refuses every request, quoting the Authorization header it was sent
    server = createServer((request, response) => {
      response.writeHead(401, { 'content-type': 'text/plain' });
      response.end(`unauthorized: ${request.headers.authorization ?? 'none'}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });
  after(async () => {
    unregisterCollectorType('test-echo');
    await new Promise((resolve) => server.close(resolve));
  });

  it('never shows a planted secret in the run, the source, its health, the collector or the log', async () => {
    const admin = await createKey(app.current.sql, 'adm');
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    const documents = [
      { type: 'token', token: canary },
      { type: 'basic', username: `user-${canary}`, password: `pw-${canary}` },
      {
        type: 'tls',
        client_certificate: `-----BEGIN CERTIFICATE-----\n${canary}${canary}\n-----END CERTIFICATE-----`,
        client_key: `key-${canary}`,
      },
    ];
    const bodies: string[] = [];
    const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 5000, pollMs: 60_000 });
    try {
      for (const [index, document] of documents.entries()) {
        const created = await app.current.request('POST', SOURCES, {
          key: admin,
          body: { name: `echo-${index}`, collector_type: 'test-echo', endpoint },
        });
        expect(created.status, created.text).to.equal(201);
        const id = created.body.id as number;
        expect(
          (await app.current.request('PUT', `${SOURCES}/${id}/credentials`, { key: admin, body: document })).status,
        ).to.equal(204);
        const triggered = await app.current.request(
          'POST',
          `/api/v1/collectors/${created.body.collector_id}/trigger?source_id=${id}`,
          { key: admin },
        );
        await worker.tick();
        await worker.idle();
        const run = await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin);
        expect(run.body.status, `the collection with ${document.type} credentials fails`).to.equal('failed');
        expect(run.body.error).to.be.a('string').and.not.equal('');
        for (const path of [
          `/api/v1/collection-runs/${triggered.body.run_id}`,
          `${SOURCES}/${id}`,
          SOURCES,
          `/api/v1/collectors/${created.body.collector_id}/runs`,
          `/api/v1/collectors/${created.body.collector_id}/health`,
          '/api/v1/collectors/health/all',
          '/api/v1/collectors',
          `/api/v1/collectors/${created.body.collector_id}/sources`,
        ]) {
          bodies.push((await app.current.get(path, admin)).text);
        }
      }
    } finally {
      await worker.stop();
    }
    expect(bodies.filter((text) => text.includes(canary))).to.deep.equal([]);
    expect(app.current.logs.filter((line) => line.includes(canary))).to.deep.equal([]);
    // what the server echoed reached the error, struck out
    expect(bodies.join('\n')).to.include('[redacted]');
  });
});

async function expectRefusal(promise: Promise<unknown>): Promise<void> {
  let failed = false;
  try {
    await promise;
  } catch {
    failed = true;
  }
  expect(failed, 'decryption should have failed').to.equal(true);
}
