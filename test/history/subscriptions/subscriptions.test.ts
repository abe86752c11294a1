import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { SubscriptionDelivery } from '../../../src/history/subscriptions/delivery.js';
import { subscriptionsToDeliver } from '../../../src/history/subscriptions/lease-store.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { describeWith, listening } from '../../support/dependencies.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on loopback that answers what `answer` says and keeps what it was sent. */
class Receiver {
  readonly received: Received[] = [];
  answer = 204;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.statusCode = this.answer;
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  batches(): {
    type: string;
    data: { subscription_id: string; sequence: number; records: { ci_name: string; ci_id: string; id: string }[] };
  }[] {
    return this.received.map((r) => JSON.parse(r.body));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const verified = (secret: string, message: Received) =>
  new Webhook(secret).verify(message.body, message.headers as Record<string, string>) as { type: string };

describe('change subscriptions: webhooks', function () {
  this.timeout(60_000);
  let app: TestApp;
  let admin: string;
  let receiver: Receiver;
  let delivery: SubscriptionDelivery;
  const deliver = async () => {
    await delivery.tick();
    await delivery.settle();
  };

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    // the receivers listen on loopback, which the operator lists here: their statuses are shown
    // (a loopback receiver reachable only through CINV_SOURCE_ALLOW_PRIVATE keeps them to the server log: probing.test.ts)
    app = await startTestApp({ sourceAllowedHosts: ['127.0.0.1'] });
    admin = await createKey(app.sql, 'adm');
    receiver = new Receiver();
    await receiver.start();
    delivery = new SubscriptionDelivery(app.context);
  });
  after(async () => {
    await delivery.stop();
    await receiver.stop();
    await app.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.answer = 204;
  });

  const create = async (body: Record<string, unknown>, key = admin) =>
    app.request('POST', '/api/v1/subscriptions', { key, body });

  it('creates, shows, changes and deletes subscriptions without ever showing a secret or a header value', async () => {
    const made = await create({
      name: 'crud',
      sink: { type: 'webhook', url: receiver.url, headers: { Authorization: 'Bearer s3cr3t-value' } },
    });
    expect(made.status, made.text + app.logs.filter((l) => l.includes('"level":50')).join('\n')).to.equal(201);
    expect(made.body.secret).to.match(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(made.body).to.deep.include({ name: 'crud', enabled: true, state: 'active', filter: [], search: null });
    expect(made.body.sink).to.deep.equal({ type: 'webhook', url: receiver.url, header_names: ['Authorization'] });
    const shown = await app.get(`/api/v1/subscriptions/${made.body.id}`, admin);
    expect(shown.text).not.to.include('s3cr3t-value');
    expect(shown.text).not.to.include(made.body.secret);
    expect(shown.body.secret).to.equal(undefined);
    expect((await app.get('/api/v1/subscriptions', admin)).body.items.map((s: { name: string }) => s.name)).to.include(
      'crud',
    );
    expect((await create({ name: 'crud', sink: { type: 'webhook', url: receiver.url } })).status).to.equal(409);

    const changed = await app.request('PUT', `/api/v1/subscriptions/${made.body.id}`, {
      key: admin,
      body: {
        name: 'crud-2',
        sink: { type: 'webhook', url: receiver.url },
        filter: ['ci_type:eq:k8s.pod'],
        enabled: false,
      },
    });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body).to.deep.include({ name: 'crud-2', enabled: false, filter: ['ci_type:eq:k8s.pod'] });
    expect(changed.body.sink.header_names).to.deep.equal([]);
    expect((await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin })).status).to.equal(204);
    expect((await app.get(`/api/v1/subscriptions/${made.body.id}`, admin)).status).to.equal(404);
  });

  it('refuses sinks the endpoint guard refuses, malformed filters, reserved headers, and owners that may not read changes', async () => {
    const refused = async (body: Record<string, unknown>, field: string) => {
      const reply = await create({ name: `bad-${field}-${Math.random()}`, ...body });
      expect(reply.status, reply.text).to.equal(422);
      expect(JSON.stringify(reply.body.error.details)).to.include(field);
    };
    await refused({ sink: { type: 'webhook', url: 'http://169.254.169.254/latest/meta-data' } }, 'sink.url');
    await refused({ sink: { type: 'webhook', url: 'ftp://example.com/x' } }, 'sink.url');
    await refused({ sink: { type: 'nats', url: 'http://127.0.0.1:4222', subject: 'a.b' } }, 'sink.url');
    // a metadata name or address however it is spelled, in a NATS URL as in any other
    for (const url of [
      'nats://metadata.google.internal%2e:4222',
      'nats://metadata%2E:4222',
      'nats://[::ffff:0:a9fe:a9fe]:4222',
    ]) {
      const reply = await create({ name: `metadata-${Math.random()}`, sink: { type: 'nats', url, subject: 'a.b' } });
      expect(reply.status, reply.text).to.equal(422);
      expect(reply.body.error.details.errors[0], url).to.deep.include({ field: 'sink.url' });
      expect(reply.body.error.details.errors[0].message, url).to.match(/cloud metadata|link-local/);
    }
    await refused(
      { sink: { type: 'webhook', url: receiver.url, headers: { 'webhook-id': 'x' } } },
      'sink.headers.webhook-id',
    );
    await refused(
      { sink: { type: 'webhook', url: receiver.url.replace('http://', 'http://robot:pa55word@') } },
      'sink.url',
    );
    await refused({ sink: { type: 'nats', url: 'nats://user:pa55word@127.0.0.1:4222', subject: 'a.b' } }, 'sink.url');
    const badFilter = await create({
      name: 'bad-filter',
      sink: { type: 'webhook', url: receiver.url },
      filter: ['nosuch:eq:1'],
    });
    expect(badFilter.status).to.equal(400);
    // a day the calendar lacks parses in JavaScript (it rolls over into March) but not in the database: refused now, not at every delivery
    const badDay = await create({
      name: 'bad-day',
      sink: { type: 'webhook', url: receiver.url },
      filter: ['changed_at:gt:2024-02-30'],
    });
    expect(badDay.status, badDay.text).to.equal(400);
    expect(badDay.body.error.code).to.equal('INVALID_FILTER');
    // a token in the query is kept for sending but never shown
    const tokened = await create({
      name: 'tokened',
      sink: { type: 'webhook', url: `${receiver.url}?token=t0ken-value&x=1` },
    });
    expect(tokened.status, tokened.text).to.equal(201);
    expect(tokened.body.sink.url).to.equal(`${receiver.url}?token=***&x=***`);
    expect((await app.get(`/api/v1/subscriptions/${tokened.body.id}`, admin)).text).not.to.include('t0ken-value');
    await app.request('DELETE', `/api/v1/subscriptions/${tokened.body.id}`, { key: admin });
    const writerOnly = await createKey(app.sql, 'svc', { permissions: ['subscriptions:write', 'subscriptions:read'] });
    expect(
      (await create({ name: 'no-read', sink: { type: 'webhook', url: receiver.url } }, writerOnly)).status,
    ).to.equal(403);
    const readOnly = await createKey(app.sql, 'ro');
    expect((await create({ name: 'ro', sink: { type: 'webhook', url: receiver.url } }, readOnly)).status).to.equal(403);
  });

  it("delivers what commits after it was made, filtered, signed by Standard Webhooks, with the batch's id stable in the log", async () => {
    const made = await create({
      name: 'pods',
      sink: { type: 'webhook', url: receiver.url },
      filter: ['ci_type:eq:k8s.pod'],
    });
    await ingest(
      app.sql,
      [
        buildPod({ name: 'sub-pod-1' }),
        { ...buildPod({ name: 'sub-node-1' }), ci_type: 'k8s.node', external_id: 'node/sub-node-1' },
      ],
      { source: 'sub-one' },
    );
    await deliver();
    expect(receiver.received).to.have.length(1);
    const [message] = receiver.received;
    expect(verified(made.body.secret, message!)).to.deep.include({ type: 'cinv.changes' });
    const [batch] = receiver.batches();
    expect(batch!.data.subscription_id).to.equal(made.body.id);
    expect(batch!.data.sequence).to.equal(1);
    expect(batch!.data.records.map((r) => r.ci_name)).to.deep.equal(['sub-pod-1']);
    // each record exactly as GET /changes shows it
    const listed = await app.get(`/api/v1/changes?filter=ci_id:eq:${batch!.data.records[0]!.ci_id}`, admin);
    expect(batch!.data.records).to.deep.equal(listed.body.items);
    // nothing new: nothing sent
    await deliver();
    expect(receiver.received).to.have.length(1);

    const log = await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin);
    expect(log.status).to.equal(200);
    expect(log.body.items).to.have.length(1);
    expect(log.body.items[0]).to.deep.include({
      sequence: 1,
      status: 'delivered',
      attempts: 1,
      records: 1,
      response_status: 204,
      error: null,
    });
    expect(log.body.items[0].message_id).to.equal(message!.headers['webhook-id']);

    // delivered batches leave the log after a week
    await app.sql`update subscription_deliveries set delivered_at = now() - interval '8 days' where subscription_id = ${made.body.id}`;
    const trimming = new SubscriptionDelivery(app.context);
    await trimming.tick();
    await trimming.stop();
    expect((await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items).to.deep.equal([]);

    // a wrong secret does not verify
    expect(() => verified(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, message!)).to.throw();
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('retries a failing batch with backoff before any later one, keeps its webhook-id, dead-letters it after the window, and redelivers on request', async () => {
    const made = await create({ name: 'flaky', sink: { type: 'webhook', url: receiver.url } });
    const id = made.body.id as string;
    receiver.answer = 500;
    await ingest(app.sql, [buildPod({ name: 'flaky-1' })], { source: 'sub-flaky' });
    await deliver();
    await ingest(app.sql, [buildPod({ name: 'flaky-2' })], { source: 'sub-flaky' });
    await deliver();
    // the first batch waits for its next attempt; the second is not cut past it
    expect(receiver.received).to.have.length(1);
    let log = (await app.get(`/api/v1/subscriptions/${id}/deliveries`, admin)).body.items;
    expect(log).to.have.length(1);
    expect(log[0]).to.deep.include({
      status: 'pending',
      attempts: 1,
      response_status: 500,
      error: 'the receiver answered 500',
    });
    expect(Date.parse(log[0].next_attempt_at) - app.clock.now.getTime()).to.be.within(500, 1000);

    // its time comes; the receiver is back: both batches, in order, the first with its first id,
    // sent again by another process (which writes the body from the stored records, not from a scan)
    await app.sql`update subscription_deliveries set next_attempt_at = now() - interval '1 hour' where subscription_id = ${id}`;
    await app.sql`update subscriptions set lease_owner = null, lease_until = null where id = ${id}`;
    receiver.answer = 200;
    const other = new SubscriptionDelivery(app.context);
    await other.tick();
    await other.settle();
    await other.stop();
    await app.sql`update subscriptions set lease_owner = null, lease_until = null where id = ${id}`;
    const sent = receiver.batches();
    expect(sent.map((b) => [b.data.sequence, b.data.records.map((r) => r.ci_name)])).to.deep.equal([
      [1, ['flaky-1']],
      [1, ['flaky-1']],
      [2, ['flaky-2']],
    ]);
    expect(receiver.received[1]!.headers['webhook-id']).to.equal(receiver.received[0]!.headers['webhook-id']);
    // written again from its records for the retry, the body is the same byte for byte
    expect(receiver.received[1]!.body).to.equal(receiver.received[0]!.body);
    expect(verified(made.body.secret, receiver.received[1]!)).to.deep.include({ type: 'cinv.changes' });

    // a batch failing past the retry window is dead-lettered; the subscription is failing, and goes on
    receiver.received.length = 0;
    receiver.answer = 429;
    await ingest(app.sql, [buildPod({ name: 'flaky-3' })], { source: 'sub-flaky' });
    await deliver();
    await app.sql`update subscription_deliveries set next_attempt_at = now() - interval '1 hour', retry_since = now() - interval '25 hours'
                  where subscription_id = ${id} and status = 'pending'`;
    await deliver();
    log = (await app.get(`/api/v1/subscriptions/${id}/deliveries?status=dead`, admin)).body.items;
    expect(log).to.have.length(1);
    expect(log[0]).to.deep.include({ sequence: 3, status: 'dead', attempts: 2, response_status: 429 });
    const failing = (await app.get(`/api/v1/subscriptions/${id}`, admin)).body;
    expect(failing.state).to.equal('failing');
    expect(failing.state_reason).to.include('batch 3 dead-lettered');

    // redelivered by hand: the same body and id, and the subscription is active again
    receiver.answer = 200;
    const again = await app.request('POST', `/api/v1/subscriptions/${id}/deliveries/${log[0].id}/redeliver`, {
      key: admin,
    });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.status).to.equal('pending');
    await deliver();
    const last = receiver.received[receiver.received.length - 1]!;
    expect(last.headers['webhook-id']).to.equal(receiver.received[0]!.headers['webhook-id']);
    expect((await app.get(`/api/v1/subscriptions/${id}`, admin)).body.state).to.equal('active');
    expect(
      (await app.request('POST', `/api/v1/subscriptions/${id}/deliveries/999999/redeliver`, { key: admin })).status,
    ).to.equal(404);
    await app.request('DELETE', `/api/v1/subscriptions/${id}`, { key: admin });
  });

  it('lets a receiver that does not answer hold back only its own subscription', async () => {
    const stalled = createServer(() => undefined);
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    try {
      const slow = await create({
        name: 'stalled',
        sink: { type: 'webhook', url: `http://127.0.0.1:${(stalled.address() as AddressInfo).port}/` },
      });
      const fast = await create({ name: 'prompt', sink: { type: 'webhook', url: receiver.url } });
      await ingest(app.sql, [buildPod({ name: 'both-1' })], { source: 'sub-both' });
      const started = Date.now();
      await delivery.tick();
      while (receiver.received.length === 0 && Date.now() - started < 5000)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(receiver.batches().flatMap((b) => b.data.records.map((r) => r.ci_name))).to.deep.equal(['both-1']);
      expect(Date.now() - started).to.be.below(2000);
      const waiting = (await app.get(`/api/v1/subscriptions/${slow.body.id}/deliveries`, admin)).body.items;
      expect(waiting.map((d: { status: string; attempts: number }) => [d.status, d.attempts])).to.deep.equal([
        ['pending', 0],
      ]);
      await app.request('DELETE', `/api/v1/subscriptions/${fast.body.id}`, { key: admin });
    } finally {
      stalled.closeAllConnections();
      await new Promise<void>((resolve) => stalled.close(() => resolve()));
      await delivery.settle();
    }
    const given = (await app.get('/api/v1/subscriptions', admin)).body.items.find(
      (s: { name: string }) => s.name === 'stalled',
    );
    const log = (await app.get(`/api/v1/subscriptions/${given.id}/deliveries`, admin)).body.items;
    expect(log[0]).to.deep.include({ status: 'pending', attempts: 1, response_status: null });
    expect(log[0].error).to.be.a('string');
    await app.request('DELETE', `/api/v1/subscriptions/${given.id}`, { key: admin });
  });

  it('keeps a pending batch whose CI is removed for good, and delivers it', async () => {
    const made = await create({ name: 'removed', sink: { type: 'webhook', url: receiver.url } });
    receiver.answer = 503;
    await ingest(app.sql, [buildPod({ name: 'short-lived' })], { source: 'sub-removed' });
    await deliver();
    const [ci] = await app.sql<{ ci_id: string }[]>`select ci_id from configuration_items where name = 'short-lived'`;
    await app.sql`delete from configuration_items where ci_id = ${ci!.ci_id}`;
    receiver.answer = 200;
    await app.sql`update subscription_deliveries set next_attempt_at = now() - interval '1 hour' where subscription_id = ${made.body.id}`;
    await deliver();
    const last = receiver.batches()[receiver.batches().length - 1]!;
    expect(last.data.records.map((r) => [r.ci_id, r.ci_name])).to.deep.equal([[ci!.ci_id, 'short-lived']]);
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('sends batches made pending again in their order, and lists the log newest first, past nine of them', async () => {
    const made = await create({ name: 'many', sink: { type: 'webhook', url: receiver.url } });
    for (let i = 1; i <= 11; i++) {
      await ingest(app.sql, [buildPod({ name: `many-${i}` })], { source: 'sub-many' });
      await deliver();
    }
    const log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items as {
      id: string;
      sequence: number;
    }[];
    expect(log.map((d) => d.sequence)).to.deep.equal([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    receiver.received.length = 0;
    for (const sequence of [10, 2]) {
      const again = await app.request(
        'POST',
        `/api/v1/subscriptions/${made.body.id}/deliveries/${log.find((d) => d.sequence === sequence)!.id}/redeliver`,
        { key: admin },
      );
      expect(again.status, again.text).to.equal(200);
    }
    await deliver();
    expect(receiver.batches().map((b) => b.data.sequence)).to.deep.equal([2, 10]);
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('looks at a subscription only when it has something to do: records beyond its place, or a batch due', async () => {
    const made = await create({ name: 'idle', sink: { type: 'webhook', url: receiver.url } });
    const due = async () =>
      (await subscriptionsToDeliver(app.sql, 'a-test-process', app.clock.now)).includes(made.body.id);
    expect(await due()).to.equal(false);
    await ingest(app.sql, [buildPod({ name: 'idle-1' }), buildPod({ name: 'idle-2' })], { source: 'sub-idle' });
    expect(await due()).to.equal(true);
    // a batch that stops inside a transaction's records leaves the rest of them to do
    await app.sql`update subscriptions set feed_record = (select min(id) from change_records where ci_name like 'idle-%') where id = ${made.body.id}`;
    await app.sql`update subscriptions set feed_position = (select max(position) from change_feed) where id = ${made.body.id}`;
    expect(await due()).to.equal(true);
    receiver.answer = 500;
    await deliver();
    expect(receiver.received).to.have.length(1);
    // (as if the process that holds it had stopped)
    await app.sql`update subscriptions set lease_owner = null, lease_until = null where id = ${made.body.id}`;
    // caught up, its batch waiting for its next attempt: nothing to do yet
    expect(await due()).to.equal(false);
    await app.sql`update subscription_deliveries set next_attempt_at = ${app.clock.now} where subscription_id = ${made.body.id}`;
    expect(await due()).to.equal(true);
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('gives up a batch whose change records retention removed before it could be sent, and goes on with the next', async () => {
    const made = await create({ name: 'trimmed', sink: { type: 'webhook', url: receiver.url } });
    receiver.answer = 503;
    await ingest(app.sql, [buildPod({ name: 'trimmed-1' })], { source: 'sub-trimmed' });
    await deliver();
    await app.sql`delete from change_records where ci_name = 'trimmed-1'`;
    receiver.answer = 200;
    await app.sql`update subscription_deliveries set next_attempt_at = now() - interval '1 hour' where subscription_id = ${made.body.id}`;
    // another process (this one still holds the record's text from cutting the batch) takes it over
    await app.sql`update subscriptions set lease_owner = null, lease_until = null where id = ${made.body.id}`;
    const other = new SubscriptionDelivery(app.context);
    await other.tick();
    await other.settle();
    await other.stop();
    // set aside like a batch whose retries ran out: the subscription says so until a batch goes through
    const failing = (await app.get(`/api/v1/subscriptions/${made.body.id}`, admin)).body;
    expect(failing.state).to.equal('failing');
    expect(failing.state_reason).to.include('retention');
    await app.sql`update subscriptions set lease_owner = null, lease_until = null where id = ${made.body.id}`;
    await ingest(app.sql, [buildPod({ name: 'trimmed-2' })], { source: 'sub-trimmed' });
    await deliver();
    const log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items;
    expect(log.map((d: { sequence: number; status: string }) => [d.sequence, d.status])).to.deep.equal([
      [2, 'delivered'],
      [1, 'dead'],
    ]);
    expect(log[1].error).to.include('retention');
    expect(
      receiver
        .batches()
        .slice(1)
        .flatMap((b) => b.data.records.map((r) => r.ci_name)),
    ).to.deep.equal(['trimmed-2']);
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('disables a subscription whose receiver answers 410, and sends its batch first once enabled again', async () => {
    const made = await create({ name: 'gone', sink: { type: 'webhook', url: receiver.url } });
    receiver.answer = 410;
    await ingest(app.sql, [buildPod({ name: 'gone-1' })], { source: 'sub-gone' });
    await deliver();
    const gone = (await app.get(`/api/v1/subscriptions/${made.body.id}`, admin)).body;
    expect(gone).to.deep.include({ enabled: false, state: 'gone' });
    await ingest(app.sql, [buildPod({ name: 'gone-2' })], { source: 'sub-gone' });
    await deliver();
    expect(receiver.received).to.have.length(1);
    receiver.answer = 200;
    const enabled = await app.request('PUT', `/api/v1/subscriptions/${made.body.id}`, {
      key: admin,
      body: { name: 'gone', sink: { type: 'webhook', url: receiver.url } },
    });
    expect(enabled.body).to.deep.include({ enabled: true, state: 'active' });
    await deliver();
    expect(
      receiver
        .batches()
        .slice(1)
        .flatMap((b) => b.data.records.map((r) => r.ci_name)),
    ).to.deep.equal(['gone-1', 'gone-2']);
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('shares one reading of the feed among subscriptions that read alike, and never among those whose owner or filter differs', async () => {
    const sourceId = await buildSource(app.sql, 'sub-shared');
    const scoped = await createKey(app.sql, 'svc', {
      permissions: ['subscriptions:write', 'subscriptions:read', 'changes:read'],
      scopes: [{ sourceId, scopeId: 'cluster-a' }],
    });
    const sink = { type: 'webhook', url: receiver.url };
    const made = [
      await create({ name: 'alike-1', sink }),
      await create({ name: 'alike-2', sink }),
      await create({ name: 'filtered', sink, filter: ['ci_name:eq:shared-3'] }),
      await create({ name: 'scoped', sink }, scoped),
    ].map((reply) => reply.body.id as string);
    for (let i = 1; i <= 6; i++)
      await ingest(app.sql, [buildPod({ name: `shared-${i}` })], {
        source: 'sub-shared',
        scopeId: i % 2 ? 'cluster-a' : 'cluster-b',
      });
    // batches of two: most readings are full, the ones kept for the others
    const small = new SubscriptionDelivery({
      ...app.context,
      config: { ...app.context.config, subscriptionBatchRecords: 2 },
    });
    try {
      for (let round = 0; round < 6; round++) {
        await small.tick();
        await small.settle();
      }
    } finally {
      await small.stop();
    }
    const got = (id: string) =>
      receiver
        .batches()
        .filter((b) => b.data.subscription_id === id)
        .flatMap((b) => b.data.records.map((r) => r.ci_name));
    const all = ['shared-1', 'shared-2', 'shared-3', 'shared-4', 'shared-5', 'shared-6'];
    expect(got(made[0]!)).to.deep.equal(all);
    expect(got(made[1]!)).to.deep.equal(all);
    expect(got(made[2]!)).to.deep.equal(['shared-3']);
    expect(got(made[3]!)).to.deep.equal(['shared-1', 'shared-3', 'shared-5']);
    for (const id of made)
      await app.sql`update subscriptions set lease_owner = null, lease_until = null where id = ${id}`;
    for (const id of made) await app.request('DELETE', `/api/v1/subscriptions/${id}`, { key: admin });
  });

  it('delivers only what the owner may read when each batch is cut: scopes narrowed later apply, a revoked owner pauses it', async () => {
    const sourceId = await buildSource(app.sql, 'sub-scoped');
    const owner = await createKey(app.sql, 'svc', {
      permissions: ['subscriptions:write', 'subscriptions:read', 'changes:read'],
      scopes: [{ sourceId, scopeId: 'cluster-a' }],
    });
    const made = await create({ name: 'scoped', sink: { type: 'webhook', url: receiver.url } }, owner);
    expect(made.status, made.text).to.equal(201);
    await ingest(app.sql, [buildPod({ name: 'in-a' })], { source: 'sub-scoped', scopeId: 'cluster-a' });
    await ingest(app.sql, [buildPod({ name: 'in-b' })], { source: 'sub-scoped', scopeId: 'cluster-b' });
    await deliver();
    expect(receiver.batches().flatMap((b) => b.data.records.map((r) => r.ci_name))).to.deep.equal(['in-a']);

    // the owner's scope moves to cluster-c: cluster-a's next changes are no longer delivered
    await app.sql`update api_key_scopes set scope_id = 'cluster-c' where source_id = ${sourceId}`;
    await ingest(app.sql, [buildPod({ name: 'in-a', replicas: 4 })], { source: 'sub-scoped', scopeId: 'cluster-a' });
    await ingest(app.sql, [buildPod({ name: 'in-c' })], { source: 'sub-scoped', scopeId: 'cluster-c' });
    await deliver();
    expect(receiver.batches().flatMap((b) => b.data.records.map((r) => r.ci_name))).to.deep.equal(['in-a', 'in-c']);

    await app.sql`update api_keys set revoked_at = now() where id = ${made.body.owner.id}`;
    await ingest(app.sql, [buildPod({ name: 'in-c', replicas: 5 })], { source: 'sub-scoped', scopeId: 'cluster-c' });
    await deliver();
    expect(receiver.received).to.have.length(2);
    const paused = (await app.get(`/api/v1/subscriptions/${made.body.id}`, admin)).body;
    expect(paused.state).to.equal('paused');
    expect(paused.state_reason).to.include('revoked');
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });

  it('cuts again for the new owner what was cut for the previous one and not delivered, and never sends or redelivers a batch of another owner', async () => {
    const sourceId = await buildSource(app.sql, 'sub-taken');
    // made by someone who reads cluster-a only
    const narrow = await createKey(app.sql, 'svc', {
      permissions: ['subscriptions:write', 'subscriptions:read', 'changes:read'],
      scopes: [{ sourceId, scopeId: 'cluster-a' }],
    });
    const made = await create({ name: 'taken', sink: { type: 'webhook', url: receiver.url } }, narrow);
    expect(made.status, made.text).to.equal(201);
    receiver.answer = 500;
    await ingest(app.sql, [buildPod({ name: 'taken-a' })], { source: 'sub-taken', scopeId: 'cluster-a' });
    await ingest(app.sql, [buildPod({ name: 'taken-b' })], { source: 'sub-taken', scopeId: 'cluster-b' });
    await deliver();
    const firstTry = receiver.batches();
    expect(firstTry.flatMap((b) => b.data.records.map((r) => r.ci_name))).to.deep.equal(['taken-a']);

    // the admin, whose rights cover the owner's, takes it over and points it at another receiver
    const own = new Receiver();
    await own.start();
    try {
      const taken = await app.request('PUT', `/api/v1/subscriptions/${made.body.id}`, {
        key: admin,
        body: { name: 'taken', sink: { type: 'webhook', url: own.url } },
      });
      expect(taken.status, taken.text).to.equal(200);
      expect(taken.body.owner.id).not.to.equal(made.body.owner.id);
      // the previous owner's rights no longer cover the owner's: to it, the subscription is gone
      expect((await app.get(`/api/v1/subscriptions/${made.body.id}`, narrow)).status).to.equal(404);
      let log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items;
      const setAside = log.filter((d: { status: string }) => d.status === 'dead');
      expect(setAside.length).to.be.at.least(1);
      expect(setAside[0].error).to.include('previous owner');

      await deliver();
      await deliver();
      // cut again with the new owner's rights: what the previous owner could not read is in it now
      expect(own.batches().flatMap((b) => b.data.records.map((r) => r.ci_name))).to.have.members([
        'taken-a',
        'taken-b',
      ]);
      expect(Math.min(...own.batches().map((b) => b.data.sequence))).to.be.above(
        Math.max(...firstTry.map((b) => b.data.sequence)),
      );
      expect(receiver.received).to.have.length(firstTry.length);

      const sent = own.received.length;
      const again = await app.request(
        'POST',
        `/api/v1/subscriptions/${made.body.id}/deliveries/${setAside[0].id}/redeliver`,
        { key: admin },
      );
      expect(again.status, again.text).to.equal(409);
      expect(again.body.error.details.reason).to.equal('other_owner');
      await deliver();
      expect(own.received).to.have.length(sent);
      log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items;
      expect(log.filter((d: { status: string }) => d.status === 'pending')).to.deep.equal([]);
    } finally {
      await own.stop();
      await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
    }
  });

  it('sends a signed test message, signs with both secrets while a rotation overlaps, and never logs a secret', async () => {
    const made = await create({
      name: 'testing',
      sink: { type: 'webhook', url: receiver.url, headers: { 'X-Token': 'hdr-secret-1' } },
    });
    const tested = await app.request('POST', `/api/v1/subscriptions/${made.body.id}/test`, { key: admin });
    expect(tested.status, tested.text).to.equal(200);
    expect(tested.body).to.deep.include({ delivered: true, response_status: 204, error: null });
    expect(verified(made.body.secret, receiver.received[0]!)).to.deep.include({ type: 'cinv.test' });
    expect(receiver.received[0]!.headers['x-token']).to.equal('hdr-secret-1');

    const rotated = await app.request('POST', `/api/v1/subscriptions/${made.body.id}/rotate-secret`, {
      key: admin,
      body: { overlap_seconds: 3600 },
    });
    expect(rotated.status, rotated.text).to.equal(200);
    expect(rotated.body.secret).not.to.equal(made.body.secret);
    expect(rotated.body.secret_rotating_until).to.be.a('string');
    await app.request('POST', `/api/v1/subscriptions/${made.body.id}/test`, { key: admin });
    const after = receiver.received[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).to.have.length(2);
    verified(made.body.secret, after);
    verified(rotated.body.secret, after);
    // the header value stays across the rotation
    expect(after.headers['x-token']).to.equal('hdr-secret-1');

    receiver.answer = 503;
    const failed = await app.request('POST', `/api/v1/subscriptions/${made.body.id}/test`, { key: admin });
    expect(failed.body).to.deep.include({ delivered: false, response_status: 503, error: 'the receiver answered 503' });
    const logged = app.logs.join('\n');
    for (const secret of [made.body.secret, rotated.body.secret, 'hdr-secret-1']) expect(logged).not.to.include(secret);
    await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin });
  });
});

const NATS_URL = process.env.CINV_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

describeWith(listening(NATS_URL, 4222))(
  `change subscriptions: a NATS JetStream sink (skipped outside CI when no NATS server listens at ${NATS_URL}; under CI=true a missing one fails)`,
  function () {
    this.timeout(60_000);
    let app: TestApp;
    let admin: string;
    let delivery: SubscriptionDelivery;
    const stream = `CINV_TEST_${process.pid}_${Date.now()}`;
    const subject = `cinv.test.${process.pid}.${Date.now()}`;

    before(async () => {
      await resetDatabase((await testDatabase()).sql);
      app = await startTestApp();
      admin = await createKey(app.sql, 'adm');
      delivery = new SubscriptionDelivery(app.context);
      const nc = await connect({ servers: new URL(NATS_URL).host });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [subject], duplicate_window: 60_000_000_000 });
      await nc.close();
    });
    after(async () => {
      await delivery.stop();
      await app.close();
      const nc = await connect({ servers: new URL(NATS_URL).host });
      await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
      await nc.close();
    });

    it("publishes each batch with Nats-Msg-Id, counted delivered on the stream's acknowledgement; a redelivery is deduplicated by JetStream", async () => {
      const made = await app.request('POST', '/api/v1/subscriptions', {
        key: admin,
        body: { name: 'nats', sink: { type: 'nats', url: NATS_URL, subject } },
      });
      expect(made.status, made.text).to.equal(201);
      await ingest(app.sql, [buildPod({ name: 'nats-1' }), buildPod({ name: 'nats-2' })], { source: 'sub-nats' });
      await delivery.tick();
      await delivery.settle();
      const log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items;
      expect(log).to.have.length(1);
      expect(log[0]).to.deep.include({ status: 'delivered', attempts: 1, records: 2 });

      const nc = await connect({ servers: new URL(NATS_URL).host });
      try {
        const jsm = await jetstreamManager(nc);
        const stored = await jsm.streams.getMessage(stream, { seq: 1 });
        expect(stored!.header.get('Nats-Msg-Id')).to.equal(log[0].message_id);
        const body = JSON.parse(new TextDecoder().decode(stored!.data));
        expect(body.data.records.map((r: { ci_name: string }) => r.ci_name)).to.deep.equal(['nats-1', 'nats-2']);

        await app.request('POST', `/api/v1/subscriptions/${made.body.id}/deliveries/${log[0].id}/redeliver`, {
          key: admin,
        });
        await delivery.tick();
        await delivery.settle();
        expect(
          (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items[0],
        ).to.deep.include({ status: 'delivered', attempts: 2 });
        expect((await jsm.streams.info(stream)).state.messages).to.equal(1);
      } finally {
        await nc.close();
      }
    });
  },
);

const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((file) =>
  existsSync(file),
);

describeWith(NATS_SERVER !== undefined)(
  'change subscriptions: a private NATS server restarted during a run (skipped outside CI when nats-server is not installed; under CI=true a missing one fails)',
  function () {
    this.timeout(90_000);
    let app: TestApp;
    let admin: string;
    let delivery: SubscriptionDelivery;
    let server: ChildProcess | undefined;
    const store = mkdtempSync(path.join(tmpdir(), 'cinv-nats-'));
    let port = 0;

    const startNats = async () => {
      server = spawn(NATS_SERVER!, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' });
      for (let i = 0; i < 100 && !listening(`nats://127.0.0.1:${port}`, 4222); i++) await sleep(50);
    };
    const stopNats = async () => {
      const stopping = new Promise((resolve) => server!.once('exit', resolve));
      server!.kill('SIGKILL');
      await stopping;
    };

    before(async () => {
      await resetDatabase((await testDatabase()).sql);
      app = await startTestApp({ webhookTimeoutMs: 1500 });
      admin = await createKey(app.sql, 'adm');
      delivery = new SubscriptionDelivery(app.context);
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      port = (probe.address() as AddressInfo).port;
      await new Promise<void>((resolve) => probe.close(() => resolve()));
      await startNats();
      const nc = await connect({ servers: `127.0.0.1:${port}` });
      await (
        await jetstreamManager(nc)
      ).streams.add({ name: 'RESTARTED', subjects: ['cinv.restarted'], duplicate_window: 120_000_000_000 });
      await nc.close();
    });
    after(async () => {
      await delivery.stop();
      await app.close();
      if (server && server.exitCode === null) await stopNats();
      rmSync(store, { recursive: true, force: true });
    });

    it('retries what failed while the server was down and delivers everything once it is back, none twice in the stream', async () => {
      const deliver = async () => {
        await delivery.tick();
        await delivery.settle();
      };
      const made = await app.request('POST', '/api/v1/subscriptions', {
        key: admin,
        body: { name: 'restarted', sink: { type: 'nats', url: `nats://127.0.0.1:${port}`, subject: 'cinv.restarted' } },
      });
      expect(made.status, made.text).to.equal(201);
      await ingest(app.sql, [buildPod({ name: 'before-restart' })], { source: 'sub-restart' });
      await deliver();
      await stopNats();
      await ingest(app.sql, [buildPod({ name: 'while-down' })], { source: 'sub-restart' });
      await deliver();
      let log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items;
      expect(log.map((d: { status: string }) => d.status)).to.deep.equal(['pending', 'delivered']);
      expect(log[0].error).to.match(/^NATS: /);

      await startNats();
      await ingest(app.sql, [buildPod({ name: 'after-restart' })], { source: 'sub-restart' });
      for (let i = 0; i < 20; i++) {
        await app.sql`update subscription_deliveries set next_attempt_at = now() - interval '1 hour' where status = 'pending'`;
        await deliver();
        log = (await app.get(`/api/v1/subscriptions/${made.body.id}/deliveries`, admin)).body.items;
        if (log.length === 3 && log.every((d: { status: string }) => d.status === 'delivered')) break;
        await sleep(250);
      }
      expect(log.map((d: { sequence: number; status: string }) => [d.sequence, d.status])).to.deep.equal([
        [3, 'delivered'],
        [2, 'delivered'],
        [1, 'delivered'],
      ]);
      const nc = await connect({ servers: `127.0.0.1:${port}` });
      try {
        const jsm = await jetstreamManager(nc);
        expect((await jsm.streams.info('RESTARTED')).state.messages).to.equal(3);
        const names: string[] = [];
        for (let seq = 1; seq <= 3; seq++) {
          const message = await jsm.streams.getMessage('RESTARTED', { seq });
          names.push(
            ...JSON.parse(new TextDecoder().decode(message!.data)).data.records.map(
              (r: { ci_name: string }) => r.ci_name,
            ),
          );
        }
        expect(names).to.deep.equal(['before-restart', 'while-down', 'after-restart']);
      } finally {
        await nc.close();
      }
    });
  },
);
