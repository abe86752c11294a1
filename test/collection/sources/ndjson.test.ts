import { expect } from 'chai';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { heapHeldTight } from '../../../src/platform/observability/heap-growth.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod } from '../../support/factories.js';

describe('NDJSON pushes to a universal source', function () {
  this.timeout(300_000);
  const app = useTestApp({ reconcileBatchSize: 500 });
  let admin: string;
  let sourceId: number;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    sourceId = (
      await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: 'agents', collector_type: 'universal' },
      })
    ).body.id;
  });

  const push = (body: RequestInit['body'], query = '', headers: Record<string, string> = {}) =>
    fetch(`${app.current.baseUrl}/api/v1/sources/${sourceId}/ingest${query}`, {
      method: 'POST',
      headers: { 'x-api-key': admin, 'content-type': 'application/x-ndjson', ...headers },
      body,
      duplex: 'half',
    } as RequestInit).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  const lines = (records: unknown[]) => records.map((r) => JSON.stringify(r)).join('\n') + '\n';

  it('reconciles a snapshot line by line, in batches, with mode and scope from the query', async () => {
    const reply = await push(lines([buildPod({ name: 'a' }), buildPod({ name: 'b' })]), '?scope_id=c1');
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body).to.deep.include({ received: 2, created: 2 });
    const stored = await app.current.sql<{ scope_id: string }[]>`select scope_id from configuration_items`;
    expect(stored.map((ci) => ci.scope_id)).to.deep.equal(['c1', 'c1']);
  });

  it('takes deletions in delta mode, and gzip', async () => {
    await push(lines([buildPod({ name: 'a' }), buildPod({ name: 'b' })]));
    const delta = lines([buildPod({ name: 'c' }), { delete: buildPod({ name: 'a' }).external_id }]);
    const reply = await push(gzipSync(delta), '?mode=delta', { 'content-encoding': 'gzip' });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body).to.deep.include({ received: 1, created: 1, archived: 1 });
    const deletionInSnapshot = await push(lines([{ delete: 'x' }]));
    expect(deletionInSnapshot.status).to.equal(422);
    expect(deletionInSnapshot.body.error.details.errors[0].field).to.equal('items.0.delete');
  });

  it('names the line and field of a bad record, keeping the batches before it', async () => {
    const good = Array.from({ length: 600 }, (_, i) => buildPod({ name: `ok-${i}` }));
    const bad = { ...buildPod({ name: 'bad' }), ci_type: 'NOT A TYPE' };
    const reply = await push(lines([...good, bad, buildPod({ name: 'after' })]));
    expect(reply.status).to.equal(422);
    expect(reply.body.error.details.errors[0].field).to.equal('items.600.ci_type');
    // the first full batch (500) was written; the partial one and what followed the bad line were not
    expect((await app.current.get('/api/v1/configuration-items?limit=1', admin)).body.total).to.equal(500);
    const broken = await push('{"external_id": "x",\n');
    expect(broken.status).to.equal(422);
    expect(broken.body.error.details.errors[0]).to.deep.include({
      field: 'items.0',
      message: 'is not a JSON document',
    });
    const surrogate = await push(
      lines([buildPod({ name: 'lone' }), { ...buildPod({ name: 'lone-2' }), external_id: 'pod/x/\udfffy' }]),
    );
    expect(surrogate.status).to.equal(422);
    expect(surrogate.body.error.details.errors[0]).to.deep.include({ field: 'items.1' });
    expect(surrogate.body.error.details.errors[0].message).to.match(/valid Unicode/);
    const corrupt = await push(Buffer.from('not gzip at all'), '', { 'content-encoding': 'gzip' });
    expect(corrupt.status).to.equal(400);
    expect(heapHeldTight(), 'failed pushes give the heap back to the default policy').to.equal(false);
  });

  it('tells the source of every push: an accepted one is its last collection, a refused one its last error, until the next succeeds', async () => {
    const detail = async () => (await app.current.get(`/api/v1/sources/${sourceId}`, admin)).body;
    const before = await detail();
    expect(before.last_collection).to.equal(null);
    expect(before.health_status).to.equal(null);

    expect((await push(lines([buildPod({ name: 'a' })]))).status).to.equal(200);
    const accepted = await detail();
    expect(accepted.last_collection).to.be.a('string');
    expect(accepted.last_error).to.equal(null);
    expect(accepted.health_status).to.deep.include({ status: 'healthy' });
    expect(accepted.health_status.details.message).to.equal(
      'push accepted: 1 received, 1 created, 0 updated, 1 changes',
    );

    const refused = await push(lines([{ ...buildPod({ name: 'bad' }), ci_type: 'NOT A TYPE' }]));
    expect(refused.status).to.equal(422);
    const failed = await detail();
    expect(failed.last_collection, 'a refused push is no collection').to.equal(accepted.last_collection);
    expect(failed.health_status).to.deep.include({ status: 'degraded' });
    expect(failed.last_error).to.equal(refused.body.error.message);
    const health = (await app.current.get('/api/v1/collectors/health/all', admin)).body.collectors[0];
    expect(health).to.deep.include({ status: 'degraded', sources_healthy: 0 });

    expect((await push(lines([buildPod({ name: 'a' })]))).status).to.equal(200);
    const again = await detail();
    expect(again.health_status).to.deep.include({ status: 'healthy' });
    expect(again.last_error).to.equal(null);
    expect(new Date(again.last_collection).getTime()).to.be.at.least(new Date(accepted.last_collection).getTime());
  });

  it('streams 30 000 records with bounded memory', async () => {
    const total = 30_000;
    let sent = 0;
    // generated while it is sent: the client never holds the whole body either
    const body = Readable.from(
      (function* () {
        while (sent < total) {
          const chunk: string[] = [];
          for (let i = 0; i < 1000 && sent < total; i++, sent++)
            chunk.push(JSON.stringify(buildPod({ name: `bulk-${sent}` })));
          yield Buffer.from(`${chunk.join('\n')}\n`);
        }
      })(),
    );
    // live memory, not garbage the collector has not come to yet: measured right after a collection
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const live = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const before = live();
    let peak = before;
    // each sample is a full collection of the whole test process's heap: often enough to see a
    // body piling up (it would take tens of seconds to arrive), rarely enough not to be the cost
    const sampler = setInterval(() => (peak = Math.max(peak, live())), 2000);
    const reply = await push(Readable.toWeb(body) as unknown as RequestInit['body']);
    clearInterval(sampler);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    expect(reply.body).to.deep.include({ received: total, created: total });
    // the body is some 27 MB (as parsed objects several times that); the server (in this process)
    // holds a batch at a time
    const grownMb = (peak - before) / 1024 / 1024;
    console.log(`      NDJSON push: ${total} records, live heap grew at most ${grownMb.toFixed(0)} MB`);
    expect(grownMb).to.be.below(20);
  });
});
