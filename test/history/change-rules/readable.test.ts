import { expect } from 'chai';
import { catchUpApplications } from '../../../src/history/change-rules/service.js';
import { forgetClosedFolds } from '../../../src/history/records/folds.js';
import { recordChanges } from '../../../src/history/records/writer.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, useTestApp, type TestApp } from '../../support/app.js';
import { ciIdOf, ingest } from '../../support/factories.js';

interface Entry {
  id: string;
  ci_name: string;
  change_type: string;
  kind: string | null;
  severity: string | null;
  ignored?: boolean;
  changed_at: string;
  fold?: { records: number; last_at: string };
  changes: { field: string }[];
}

const pod = (name: string, restarts: number, ready = true): UniversalRecord => ({
  external_id: `pod/shop/${name}`,
  ci_type: 'k8s.pod',
  name,
  namespace: 'shop',
  raw_data: {
    metadata: { name, namespace: 'shop', labels: { team: 'payments' } },
    status: { containerStatuses: [{ name: 'app', ready, restartCount: restarts }] },
  },
  type_data: {},
});

const deployment = (image: string, env: Record<string, string> = {}, replicas = 2): UniversalRecord => ({
  external_id: 'deployment/shop/checkout',
  ci_type: 'k8s.deployment',
  name: 'checkout',
  namespace: 'shop',
  raw_data: {
    metadata: { name: 'checkout', namespace: 'shop' },
    spec: {
      replicas,
      template: {
        spec: {
          containers: [{ name: 'app', image, env: Object.entries(env).map(([name, value]) => ({ name, value })) }],
        },
      },
    },
  },
  type_data: {},
});

const at = (minute: number) => new Date(Date.UTC(2026, 10, 30, 13, 0) + minute * 60_000);

const post = (app: TestApp, path: string, body: unknown, key: string) => app.request('POST', path, { key, body });

async function history(app: TestApp, key: string, query: string): Promise<Entry[]> {
  const reply = await app.get(`/api/v1/changes?${query}`, key);
  expect(reply.status, reply.text).to.equal(200);
  return (reply.body as { items: Entry[] }).items;
}

describe('readable changes: kinds, severities and folds', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  it('classifies records by the shipped rules and filters on kind and severity', async () => {
    const sql = app.current.sql;
    await ingest(sql, [deployment('shop:1.27.0'), pod('p-1', 0)], { now: at(0) });
    await ingest(sql, [deployment('shop:1.28.0', { PAYMENT_TIMEOUT_MS: '500' }), pod('p-1', 0)], { now: at(10) });
    await ingest(sql, [deployment('shop:1.28.0', { PAYMENT_TIMEOUT_MS: '500' }), pod('p-1', 3, false)], {
      now: at(20),
    });
    await ingest(sql, [deployment('shop:1.28.0', { PAYMENT_TIMEOUT_MS: '500' }, 0), pod('p-1', 3, false)], {
      now: at(30),
    });
    const all = await history(app.current, admin, 'sort_order=asc');
    expect(all.map((e) => [e.ci_name, e.kind, e.severity])).to.deep.equal([
      ['checkout', 'created', 'info'],
      ['p-1', 'created', 'info'],
      ['checkout', 'config', 'high'],
      ['p-1', 'restart', 'high'],
      ['checkout', 'scale', 'high'],
    ]);
    expect((await history(app.current, admin, 'filter=kind:eq:restart')).map((e) => e.ci_name)).to.deep.equal(['p-1']);
    expect(await history(app.current, admin, 'filter=severity:in:high&sort_order=asc')).to.have.length(3);
    const bad = await app.current.get('/api/v1/changes?filter=severity:eq:urgent', admin);
    expect(bad.status).to.equal(400);
    // the feed (and so every subscription) filters on them too, and carries them
    const feed = await app.current.get(
      '/api/v1/changes/feed?filter=severity:eq:high&filter=kind:in:restart,scale',
      admin,
    );
    expect(feed.status, feed.text).to.equal(200);
    expect((feed.body as { items: Entry[] }).items.map((e) => [e.ci_name, e.kind, e.severity])).to.deep.equal([
      ['p-1', 'restart', 'high'],
      ['checkout', 'scale', 'high'],
    ]);
    // and the statistics count them by kind
    const stats = await app.current.get(
      '/api/v1/changes/stats?start_date=2026-11-30T00:00:00Z&end_date=2026-12-01T00:00:00Z',
      admin,
    );
    expect(stats.status, stats.text).to.equal(200);
    expect(stats.body.changes_by_kind).to.deep.equal([
      { kind: 'created', count: 2 },
      { kind: 'config', count: 1 },
      { kind: 'restart', count: 1 },
      { kind: 'scale', count: 1 },
    ]);
  });

  it('folds repeats of one change on one CI within the window, never across a deletion', async () => {
    const sql = app.current.sql;
    await ingest(sql, [pod('p-1', 0), pod('p-2', 0)], { now: at(0) });
    // p-1 restarts every five minutes: the counter varies, the fingerprint does not
    for (let i = 1; i <= 4; i++) await ingest(sql, [pod('p-1', i), pod('p-2', 0)], { now: at(i * 5) });
    // p-1 goes, comes back, and restarts again: a new fold
    await ingest(sql, [], { now: at(26), mode: 'delta', deletions: ['pod/shop/p-1'] });
    await ingest(sql, [pod('p-1', 4), pod('p-2', 0)], { now: at(27) });
    await ingest(sql, [pod('p-1', 5), pod('p-2', 0)], { now: at(28) });
    // more than the window after the first fold opened: a fold of its own
    await ingest(sql, [pod('p-1', 6), pod('p-2', 0)], { now: at(90) });
    const exact = await history(
      app.current,
      admin,
      'filter=ci_name:eq:p-1&filter=change_type:eq:UPDATED&sort_order=asc',
    );
    expect(exact).to.have.length(7);
    const folded = await history(
      app.current,
      admin,
      'fold=true&filter=ci_name:eq:p-1&filter=change_type:eq:UPDATED&sort_order=asc',
    );
    expect(folded.map((e) => [e.changed_at, e.fold?.records, e.fold?.last_at])).to.deep.equal([
      [at(5).toISOString(), 4, at(20).toISOString()],
      // back after its removal: a status move, and the restarts after it fold on their own
      [at(27).toISOString(), 1, at(27).toISOString()],
      [at(28).toISOString(), 1, at(28).toISOString()],
      [at(90).toISOString(), 1, at(90).toISOString()],
    ]);
    const ciId = await ciIdOf(sql, 'pod/shop/p-1');
    const onCi = await app.current.get(`/api/v1/ci-changes/${ciId}?fold=true`, admin);
    expect(onCi.status).to.equal(200);
    // newest first: the restart at 90, at 28, the re-creation at 27, the removal at 26, the fold at 5, the creation
    expect((onCi.body as { items: Entry[] }).items.map((e) => e.fold?.records)).to.deep.equal([1, 1, 1, 1, 4, 1]);
    // a batch holding one CI twice folds as two batches would: the second restart joins the first's fold
    const other = await ciIdOf(sql, 'pod/shop/p-2');
    const restart = (minute: number, n: number) => ({
      tenant_id: DEFAULT_TENANT_ID,
      ci_id: other,
      source_id: null,
      scope_id: null,
      ci_name: 'p-2',
      ci_namespace: 'shop',
      ci_type: 'k8s.pod',
      change_type: 'UPDATED' as const,
      changed_at: at(minute),
      changes: [
        {
          field: 'raw_data.status.containerStatuses',
          old_value: [{ restartCount: n }],
          new_value: [{ restartCount: n + 1 }],
        },
      ],
    });
    await sql.begin((tx) => recordChanges(tx, [restart(101, 1), restart(100, 0)]));
    const both = await history(app.current, admin, 'fold=true&filter=ci_name:eq:p-2&filter=change_type:eq:UPDATED');
    expect(both.map((e) => [e.changed_at, e.fold?.records])).to.deep.equal([[at(100).toISOString(), 2]]);
    // the sweep forgets the open folds past every window, and nothing else
    const heads = async () =>
      Number((await sql<{ n: number }[]>`select count(*)::int as n from change_fold_heads`)[0]!.n);
    // p-1's restarts from 14:30 and p-2's from 14:40 may still be joined; p-1's folds before its removal ended with it
    expect(await heads()).to.equal(2);
    expect(await forgetClosedFolds(sql, at(90), 1)).to.equal(0);
    expect(await forgetClosedFolds(sql, new Date(at(101).getTime() + 8 * 86_400_000), 1)).to.equal(2);
    expect(await heads()).to.equal(0);
  });

  it('applies change rules at write time and again to a window of history, audited', async () => {
    const sql = app.current.sql;
    await ingest(sql, [pod('canary-1', 0), pod('p-1', 0)], { now: at(0) });
    await ingest(sql, [pod('canary-1', 1), pod('p-1', 1)], { now: at(5) });
    const ignore = await post(
      app.current,
      '/api/v1/change-rules',
      { name: 'canaries restart', match: 'name starts with canary- and change.kind = restart', action: 'ignore' },
      admin,
    );
    expect(ignore.status, ignore.text).to.equal(201);
    const louder = await post(
      app.current,
      '/api/v1/change-rules',
      {
        name: 'payments restarts are crashes',
        match: 'raw_data.metadata.labels.team = payments and change.field = raw_data.status.containerStatuses',
        action: 'classify',
        kind: 'crash',
      },
      admin,
    );
    expect(louder.status, louder.text).to.equal(201);
    // written from now on: shaped at once
    await ingest(sql, [pod('canary-1', 2), pod('p-1', 2)], { now: at(10) });
    const restarts = async (query = '') =>
      (await history(app.current, admin, `filter=change_type:eq:UPDATED&sort_order=asc${query}`)).map((e) => [
        e.ci_name,
        e.changed_at.slice(11, 16),
        e.kind,
      ]);
    expect(await restarts()).to.deep.equal([
      ['canary-1', '13:05', 'restart'],
      ['p-1', '13:05', 'restart'],
      ['p-1', '13:10', 'crash'],
    ]);
    expect((await restarts('&include_ignored=true')).map((r) => r[0])).to.include('canary-1');
    // taken back over the window: the older records are shaped the same way
    const applied = await post(
      app.current,
      '/api/v1/change-rules/apply',
      { from: at(0).toISOString(), until: at(60).toISOString() },
      admin,
    );
    expect(applied.status, applied.text).to.equal(202);
    await catchUpApplications(app.current.context);
    const run = await app.current.get(
      `/api/v1/change-rules/applications/${(applied.body as { id: string }).id}`,
      admin,
    );
    expect(run.body).to.include({ done: true, records: 6, changed: 2 });
    expect(await restarts()).to.deep.equal([
      ['p-1', '13:05', 'crash'],
      ['p-1', '13:10', 'crash'],
    ]);
    const audit = await sql<
      { type: string }[]
    >`select event_type as type from audit_events where event_type like 'change_rule.%' order by id`;
    expect(audit.map((a) => a.type)).to.deep.equal([
      'change_rule.created',
      'change_rule.created',
      'change_rule.applied',
    ]);
  });

  it('refuses matches it cannot apply, with the position', async () => {
    for (const [match, where] of [
      ['change.colour = red', 'unknown change field'],
      ['change.severity = urgent', 'a severity is one of'],
      ['changed raw_data.spec since now-1h', 'cannot read history'],
      ['nme = x', 'nme'],
    ] as const) {
      const reply = await post(app.current, '/api/v1/change-rules', { name: match, match, action: 'ignore' }, admin);
      expect(reply.status, match).to.equal(422);
      expect(JSON.stringify(reply.body), match).to.contain(where);
    }
    const noEffect = await post(
      app.current,
      '/api/v1/change-rules',
      { name: 'x', match: '*', action: 'classify' },
      admin,
    );
    expect(noEffect.status).to.equal(422);
  });
});
