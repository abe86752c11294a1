import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Sql } from '../../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { trimChangeHistory } from '../../../src/history/records/retention.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';

interface FeedPage {
  items: { id: string; ci_name: string; change_type: string; changes: unknown[] }[];
  next_cursor: string;
  caught_up: boolean;
}

/** Follows the feed from `after` until it is caught up; every record read, in order. */
async function follow(
  app: TestApp,
  key: string,
  query = '',
  after?: string,
  limit = 3,
): Promise<{ ids: string[]; names: string[]; cursor: string }> {
  const ids: string[] = [];
  const names: string[] = [];
  let cursor = after;
  for (;;) {
    const reply = await app.get<FeedPage>(
      `/api/v1/changes/feed?limit=${limit}${query}${cursor ? `&after=${cursor}` : ''}`,
      key,
    );
    expect(reply.status, reply.text).to.equal(200);
    ids.push(...reply.body.items.map((item) => item.id));
    names.push(...reply.body.items.map((item) => item.ci_name));
    cursor = reply.body.next_cursor;
    if (reply.body.caught_up) return { ids, names, cursor };
  }
}

/** One change record written in its own transaction, which holds `hold` ms before it commits. */
async function writeRecord(sql: Sql, sourceId: string, name: string, hold = 0, started?: () => void): Promise<string> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: string }[]>`
      insert into change_records (tenant_id, ci_id, source_id, ci_name, ci_type, change_type, changed_at, changes, changed_fields)
      values (${DEFAULT_TENANT_ID}, gen_random_uuid(), ${sourceId}, ${name}, 'k8s.pod', 'UPDATED', now(),
              '[{"field": "raw_data.spec.replicas", "old_value": 1, "new_value": 2}]', '{raw_data.spec.replicas}')
      returning id::text`;
    started?.();
    if (hold > 0) await sleep(hold);
    return row!.id;
  });
}

describe('the change feed', function () {
  let app: TestApp;
  let key: string;
  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    app = await startTestApp();
    key = await createKey(app.sql, 'ro');
  });
  after(() => app.close());

  it('hands out every record once in commit order, follows filters and scopes, and starts at the beginning or at now', async () => {
    await ingest(app.sql, [buildPod({ name: 'feed-a' }), buildPod({ name: 'feed-b' })], {
      source: 'feed-one',
      scopeId: 'cluster-a',
    });
    await ingest(app.sql, [buildPod({ name: 'feed-c' })], { source: 'feed-two', scopeId: 'cluster-b' });
    await ingest(app.sql, [buildPod({ name: 'feed-a', replicas: 3 }), buildPod({ name: 'feed-b' })], {
      source: 'feed-one',
      scopeId: 'cluster-a',
    });

    const all = await follow(app, key);
    expect(all.names).to.deep.equal(['feed-a', 'feed-b', 'feed-c', 'feed-a']);
    expect(new Set(all.ids).size).to.equal(4);
    // nothing more, and a read with a wait at the end answers empty once the wait is over
    const started = Date.now();
    const idle = await app.get<FeedPage>(`/api/v1/changes/feed?after=${all.cursor}&wait=1`, key);
    expect(idle.body.items).to.deep.equal([]);
    expect(idle.body.caught_up).to.equal(true);
    expect(Date.now() - started).to.be.at.least(900);

    const updates = await follow(app, key, '&filter=change_type:eq:UPDATED', undefined, 1);
    expect(updates.names).to.deep.equal(['feed-a']);
    const searched = await follow(app, key, '&search=feed-c');
    expect(searched.names).to.deep.equal(['feed-c']);

    const sourceOne = await buildSource(app.sql, 'feed-one');
    const scoped = await createKey(app.sql, 'ro', { scopes: [{ sourceId: sourceOne, scopeId: 'cluster-a' }] });
    expect((await follow(app, scoped, '', undefined, 1)).names).to.deep.equal(['feed-a', 'feed-b', 'feed-a']);

    // `now` skips what has committed; what commits later is read
    const now = await app.get<FeedPage>('/api/v1/changes/feed?after=now', key);
    expect(now.body.items).to.deep.equal([]);
    await ingest(app.sql, [buildPod({ name: 'feed-d' })], { source: 'feed-two', scopeId: 'cluster-b' });
    expect((await follow(app, key, '', now.body.next_cursor)).names).to.deep.equal(['feed-d']);
    expect((await follow(app, scoped, '', now.body.next_cursor)).names).to.deep.equal([]);
    // the earlier cursor goes on where it stopped
    expect((await follow(app, key, '', all.cursor)).names).to.deep.equal(['feed-d']);
  });

  it('answers a waiting read as soon as a record commits', async () => {
    const { cursor } = await follow(app, key);
    const started = Date.now();
    const waiting = app.get<FeedPage>(`/api/v1/changes/feed?after=${cursor}&wait=20`, key);
    await sleep(300);
    await ingest(app.sql, [buildPod({ name: 'feed-late' })], { source: 'feed-two', scopeId: 'cluster-b' });
    const reply = await waiting;
    expect(reply.body.items.map((item) => item.ci_name)).to.deep.equal(['feed-late']);
    expect(Date.now() - started).to.be.below(5000);
  });

  it('forgets the places of transactions older than every retained record when retention trims the history', async () => {
    const [old] = await app.sql<{ position: string }[]>`
      insert into change_feed (txid, committed_at) values ('1'::xid8, now() - interval '400 days') returning position::text`;
    const before = await app.sql<{ n: number }[]>`select count(*)::int as n from change_feed`;
    await trimChangeHistory(app.sql, { defaultMs: 30 * 86_400_000, byType: new Map() }, new Date(), 1000);
    const left = await app.sql<{ position: string }[]>`select position::text from change_feed`;
    expect(left.map((row) => row.position)).not.to.include(old!.position);
    expect(left).to.have.length(before[0]!.n - 1);
  });

  it('refuses a cursor it did not hand out with a 422 naming `after`', async () => {
    for (const after of ['abc', '1', '1.2.3', '-1.0', '99999999999999999999.1', '9223372036854775808.0']) {
      const reply = await app.get(`/api/v1/changes/feed?after=${after}`, key);
      expect(reply.status, after).to.equal(422);
      expect(reply.body.error.details.errors[0].field).to.equal('after');
    }
    expect((await app.get('/api/v1/changes/feed?wait=61', key)).status).to.equal(422);
  });
});

(onRealPostgres ? describe : describe.skip)(
  'the change feed under concurrent writers (skipped on the embedded database: PGlite has one session)',
  function () {
    this.timeout(120_000);
    let app: TestApp;
    let key: string;
    let sourceId: string;
    before(async () => {
      await resetDatabase((await testDatabase()).sql);
      app = await startTestApp();
      key = await createKey(app.sql, 'ro');
      sourceId = await buildSource(app.sql, 'feed-writers');
    });
    after(() => app.close());

    it('gives a record whose transaction took its id first but committed last to a follower that has read past its id', async () => {
      const { cursor } = await follow(app, key);
      let slowStarted!: () => void;
      const inserted = new Promise<void>((resolve) => (slowStarted = resolve));
      const slow = writeRecord(app.sql, sourceId, 'slow', 1500, slowStarted);
      await inserted;
      const fast = await writeRecord(app.sql, sourceId, 'fast');
      // by id, the fast record follows the slow one, which is not visible yet: an id cursor would pass it for good
      const before = await follow(app, key, '', cursor);
      expect(before.names).to.deep.equal(['fast']);
      const slowId = await slow;
      expect(Number(slowId)).to.be.below(Number(fast));
      const later = await follow(app, key, '', before.cursor);
      expect(later.names).to.deep.equal(['slow']);
    });

    it('many writers with delayed commits: a follower reading all along receives every record exactly once', async () => {
      const { cursor } = await follow(app, key);
      const written: string[] = [];
      let writing = true;
      const writers = Array.from({ length: 6 }, async (_, writer) => {
        for (let i = 0; i < 25; i++)
          written.push(await writeRecord(app.sql, sourceId, `w${writer}-${i}`, Math.floor(Math.random() * 40)));
      });
      const received: string[] = [];
      const follower = (async () => {
        let at = cursor;
        for (;;) {
          const done = !writing;
          const reply = await app.get<FeedPage>(`/api/v1/changes/feed?after=${at}&limit=7`, key);
          expect(reply.status, reply.text).to.equal(200);
          received.push(...reply.body.items.map((item) => item.id));
          at = reply.body.next_cursor;
          if (done && reply.body.caught_up) return;
        }
      })();
      await Promise.all(writers);
      writing = false;
      await follower;
      expect(received.length).to.equal(150);
      expect(new Set(received).size).to.equal(150);
      expect([...received].sort()).to.deep.equal([...written].sort());
    });
  },
);

describe('long polls of the change feed', function () {
  this.timeout(30_000);
  let app: TestApp;
  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    // no more requests in flight than one principal's long polls: waiting ones must not count
    app = await startTestApp({ maxInFlight: 3, maxLongPollsPerPrincipal: 3, maxLongPolls: 5 });
  });
  after(() => app.close());

  type Answer = Reply;
  /**
   * A request sent again while it is shed for requests in flight: a long poll counts while it
   * reads, so a request can meet the polls' reads now and then, never their waits.
   */
  async function served(send: () => Promise<Answer>): Promise<Answer> {
    let reply = await send();
    for (
      let tries = 1;
      tries < 20 && reply.status === 503 && reply.body?.error?.details?.reason === 'overloaded';
      tries++
    ) {
      await sleep(25);
      reply = await send();
    }
    return reply;
  }
  const poll = (key: string, wait = 5) => served(() => app.get(`/api/v1/changes/feed?after=now&wait=${wait}`, key));
  /** `n` long polls, each sent once the one before has had time to reach its wait. */
  async function open(key: string, n: number): Promise<Promise<Answer>[]> {
    const polls = [];
    for (let i = 0; i < n; i++) {
      polls.push(poll(key));
      await sleep(150);
    }
    return polls;
  }

  it('do not hold the in-flight limit while they wait, and one principal keeps only so many waiting', async () => {
    const poller = await createKey(app.sql, 'ro');
    const other = await createKey(app.sql, 'adm');
    const waiting = await open(poller, 3);
    // another key's ordinary request, and the poller's own, are served meanwhile
    const list = await served(() => app.get('/api/v1/configuration-items', other));
    expect(list.status, list.text).to.equal(200);
    const read = await served(() => app.get('/api/v1/changes/feed?after=now', poller));
    expect(read.status, read.text).to.equal(200);
    // the fourth waiting read of the same key is refused at once, clearly
    const started = Date.now();
    const refused = await poll(poller);
    expect(Date.now() - started, 'refused at once').to.be.below(1000);
    expect(refused.status, refused.text).to.equal(429);
    expect(refused.body.error).to.include({ code: 'HTTP_429' });
    expect(refused.body.error.details).to.include({ reason: 'long_polls', limit: 3 });
    expect(refused.headers.get('retry-after')).to.equal('1');
    // the process's own bound: two more from another key fill it, the next is a 503
    const more = await open(other, 2);
    const busy = await poll(other);
    expect(busy.status, busy.text).to.equal(503);
    expect(busy.body.error.details.reason).to.equal('long_polls_busy');
    expect(busy.headers.get('retry-after')).to.equal('1');
    for (const reply of await Promise.all([...waiting, ...more])) {
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body.items).to.deep.equal([]);
    }
    // answered, they hand their places back
    expect((await poll(poller, 1)).status).to.equal(200);
  });
});
