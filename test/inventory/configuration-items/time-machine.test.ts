import { expect } from 'chai';
import { sweepLifecycle } from '../../../src/inventory/lifecycle/sweep.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

const MINUTE = 60_000;
const T0 = Date.parse('2026-05-04T08:00:00Z');
const t = (minutes: number) => new Date(T0 + minutes * MINUTE);
const iso = (minutes: number) => t(minutes).toISOString();

/**
 * One small inventory with a known past, read through the API: two clusters (east, west), pods
 * that are edited, moved, archived and removed, a node they run on, at minutes 0, 10, 20 and 30.
 */
describe(`lists, diffs and baselines of the inventory as it was (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: string;
  let eastOnly: string;
  let ids: Record<string, string>;

  const get = async (path: string, key = admin) => app.request('GET', path, { key });
  const ok = async (path: string, key = admin) => {
    const reply = await get(path, key);
    expect(reply.status, `${path}: ${JSON.stringify(reply.body)}`).to.equal(200);
    return reply.body;
  };
  const names = async (query: string, key = admin) =>
    ((await ok(`/api/v1/configuration-items?${query}`, key)).items as { name: string }[]).map((item) => item.name);

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    const node = { ...buildPod({ name: 'node-1' }), external_id: 'node/node-1', ci_type: 'k8s.node', namespace: null };
    const pod = (name: string, replicas = 1, runsOn = true) => ({
      ...buildPod({ name, relationships: runsOn ? [{ type: 'runs_on', target_external_id: 'node/node-1' }] : [] }),
      raw_data: {
        metadata: { name, namespace: 'default' },
        spec: { ...(replicas === 1 ? {} : { replicas }), containers: [{ name: 'app', image: 'nginx:1.25' }] },
      },
    });
    await ingest(sql, [node, pod('web-1'), pod('web-2'), pod('db-1')], { now: t(0), scopeId: 'east' });
    await ingest(sql, [pod('api-1')], { now: t(0), scopeId: 'west', source: 'k8s-west' });
    // minute 10: web-1 scaled and off the node, web-2 renamed, a job appears
    await ingest(
      sql,
      [pod('web-1', 3, false), { ...pod('web-2'), name: 'web-2b' }, { ...pod('job-1'), ci_type: 'k8s.job' }],
      {
        now: t(10),
        scopeId: 'east',
        mode: 'delta',
      },
    );
    // minute 20: db-1 deleted (archived by the delta), api-1 in the west edited
    await ingest(sql, [], { now: t(20), scopeId: 'east', mode: 'delta', deletions: ['pod/default/db-1'] });
    await ingest(sql, [pod('api-1', 2)], { now: t(20), scopeId: 'west', source: 'k8s-west', mode: 'delta' });
    // minute 30: web-1 edited back (no net difference to minute 0 but the node)
    await ingest(sql, [pod('web-1')], { now: t(30), scopeId: 'east', mode: 'delta' });
    ids = Object.fromEntries(
      await Promise.all(
        ['pod/default/web-1', 'pod/default/web-2', 'pod/default/db-1', 'pod/default/job-1', 'node/node-1'].map(
          async (id) => [id.split('/').pop()!, await ciIdOf(sql, id)],
        ),
      ),
    );
    admin = await createKey(sql, 'adm');
    const [east] = await sql<{ id: string }[]>`select id::text from sources where name = 'k8s-prod'`;
    eastOnly = await createKey(sql, 'ro', { scopes: [{ sourceId: east!.id, scopeId: 'east' }] });
    // the archived db-1 is removed for good later on: its past stays readable
    await sweepLifecycle(
      sql,
      {
        inactiveAfterMs: 10 * MINUTE,
        archiveInactiveAfterMs: 10 * MINUTE,
        archiveRetentionMs: 30 * MINUTE,
        batchSize: 10,
      },
      t(60),
    );
  });

  after(async () => {
    await app?.close();
  });

  it('lists the CIs of a moment with every filter, free text and sort applied to the values then, and walks them by cursor', async () => {
    expect(await names(`as_of=${iso(5)}&sort_by=name&sort_order=asc`)).to.deep.equal([
      'api-1',
      'db-1',
      'node-1',
      'web-1',
      'web-2',
    ]);
    expect(await names(`as_of=${iso(15)}&sort_by=name&sort_order=asc`)).to.deep.equal([
      'api-1',
      'db-1',
      'job-1',
      'node-1',
      'web-1',
      'web-2b',
    ]);
    // the default status is active then: db-1 was archived at minute 20
    expect(await names(`as_of=${iso(25)}&sort_by=name&sort_order=asc`)).to.deep.equal([
      'api-1',
      'job-1',
      'node-1',
      'web-1',
      'web-2b',
    ]);
    expect(await names(`as_of=${iso(25)}&status=archived`)).to.deep.equal(['db-1']);
    expect(await names(`as_of=${iso(15)}&filter=${encodeURIComponent('raw_data.spec.replicas:eq:3')}`)).to.deep.equal([
      'web-1',
    ]);
    expect(await names(`as_of=${iso(35)}&filter=${encodeURIComponent('raw_data.spec.replicas:eq:3')}`)).to.deep.equal(
      [],
    );
    expect(await names(`as_of=${iso(5)}&q=web-2&sort_by=name`)).to.deep.equal(['web-2']);
    expect(await names(`as_of=${iso(15)}&filter=ci_type:eq:k8s.job&include_type_data=false`)).to.deep.equal(['job-1']);
    expect(await names(`as_of=${iso(5)}&filter=ci_type:eq:k8s.job`)).to.deep.equal([]);
    // the data scopes apply to the past as to the present
    expect(await names(`as_of=${iso(5)}&sort_by=name&sort_order=asc`, eastOnly)).to.deep.equal([
      'db-1',
      'node-1',
      'web-1',
      'web-2',
    ]);

    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const body: any = await ok(
        `/api/v1/configuration-items?as_of=${iso(15)}&sort_by=name&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(body.as_of).to.equal(iso(15));
      expect(body.total).to.equal(6);
      walked.push(
        ...body.items.map(
          (item: { name: string; last_seen: unknown }) => (expect(item.last_seen).to.equal(null), item.name),
        ),
      );
      cursor = body.next_cursor;
    } while (cursor);
    expect(walked).to.deep.equal(['web-2b', 'web-1', 'node-1', 'job-1', 'db-1', 'api-1']);
    // a cursor is bound to its moment
    const first: any = await ok(`/api/v1/configuration-items?as_of=${iso(15)}&sort_by=name&limit=2`);
    expect(
      (
        await get(
          `/api/v1/configuration-items?as_of=${iso(16)}&sort_by=name&limit=2&cursor=${encodeURIComponent(first.next_cursor)}`,
        )
      ).status,
    ).to.equal(422);
  });

  it('refuses to sort or filter the past by last_seen, which is not history', async () => {
    for (const query of [
      `as_of=${iso(5)}&sort_by=last_seen`,
      `as_of=${iso(5)}&filter=${encodeURIComponent(`last_seen:gt:${iso(0)}`)}`,
    ]) {
      const reply = await get(`/api/v1/configuration-items?${query}`);
      expect(reply.status, query).to.equal(422);
      expect(reply.body.error.details.errors[0].message).to.match(/last_seen is not history/);
    }
  });

  it('diffs one CI between two moments: net field changes, relationships added and removed, and the records in between', async () => {
    const web1 = await ok(`/api/v1/configuration-items/${ids['web-1']}/diff?from=${iso(5)}&to=${iso(15)}`);
    expect(web1.existed).to.deep.equal({ from: true, to: true });
    expect(web1.fields).to.deep.equal([{ field: 'raw_data.spec.replicas', old_value: null, new_value: 3 }]);
    expect(
      web1.relationships.removed.map((r: { relationship_type: string; direction: string; related_ci_id: string }) => [
        r.relationship_type,
        r.direction,
        r.related_ci_id,
      ]),
    ).to.deep.equal([['runs_on', 'outgoing', ids['node-1']]]);
    expect(web1.relationships.added).to.deep.equal([]);
    // edited and edited back: no field difference, two records in between, the relationship back
    const back = await ok(`/api/v1/configuration-items/${ids['web-1']}/diff?from=${iso(5)}&to=${iso(35)}`);
    expect(back.fields).to.deep.equal([]);
    expect(back.changes.total).to.equal(2);
    const records = await ok(back.changes.href);
    expect(records.items.map((r: { changed_at: string }) => r.changed_at)).to.deep.equal([iso(10), iso(30)]);
    // from the node's side: the relationship is incoming
    const node = await ok(`/api/v1/configuration-items/${ids['node-1']}/diff?from=${iso(5)}&to=${iso(15)}`);
    expect(
      node.relationships.removed.map((r: { direction: string; related_ci_id: string }) => [
        r.direction,
        r.related_ci_id,
      ]),
    ).to.deep.equal([['incoming', ids['web-1']]]);

    const renamed = await ok(`/api/v1/configuration-items/${ids['web-2']}/diff?from=${iso(5)}&to=${iso(15)}`);
    expect(renamed.fields.map((f: { field: string }) => f.field)).to.include('name');
    // a CI removed for good diffs against its last state; a CI created in between has every field new
    const removed = await ok(`/api/v1/configuration-items/${ids['db-1']}/diff?from=${iso(5)}&to=${iso(25)}`);
    expect(removed.fields.find((f: { field: string }) => f.field === 'status')).to.deep.include({
      old_value: 'active',
      new_value: 'archived',
    });
    const created = await ok(`/api/v1/configuration-items/${ids['job-1']}/diff?from=${iso(5)}&to=${iso(15)}`);
    expect(created.existed).to.deep.equal({ from: false, to: true });
    expect(created.fields.find((f: { field: string }) => f.field === 'name')).to.deep.equal({
      field: 'name',
      old_value: null,
      new_value: 'job-1',
    });

    expect((await get(`/api/v1/configuration-items/${ids['job-1']}/diff?from=${iso(1)}&to=${iso(2)}`)).status).to.equal(
      404,
    );
    expect(
      (await get(`/api/v1/configuration-items/${ids['web-1']}/diff?from=${iso(15)}&to=${iso(5)}`)).status,
    ).to.equal(422);
    expect((await get(`/api/v1/configuration-items/${ids['web-1']}/diff?from=yesterday`)).status).to.equal(422);
    expect((await get(`/api/v1/configuration-items/${ids['web-1']}/diff?from=2026-05-04`)).status).to.equal(422);
  });

  it('diffs the inventory between two moments: counted by type, walked page by page, each changed CI with its paths', async () => {
    const diff = await ok(`/api/v1/inventory/diff?from=${iso(5)}&to=${iso(25)}`);
    expect(diff.counts).to.deep.include({ appeared: 1, disappeared: 0, changed: 4 });
    expect(diff.counts.by_type).to.deep.equal([
      { ci_type: 'k8s.job', appeared: 1, disappeared: 0, changed: 0 },
      { ci_type: 'k8s.pod', appeared: 0, disappeared: 0, changed: 4 },
    ]);
    const byName = Object.fromEntries(
      diff.items.map((d: { name: string; kind: string; changed_fields: string[] }) => [
        d.name,
        [d.kind, d.changed_fields],
      ]),
    );
    expect(byName['web-1']).to.deep.equal(['changed', ['raw_data.spec.replicas']]);
    expect(byName['job-1']).to.deep.equal(['appeared', []]);
    expect(byName['db-1'][1]).to.include.members(['status', 'status_updated_at']);
    expect(byName['api-1']).to.deep.equal(['changed', ['raw_data.spec.replicas']]);
    // only active CIs: db-1 left that list
    const active = await ok(`/api/v1/inventory/diff?from=${iso(5)}&to=${iso(25)}&status=active`);
    expect(
      active.items.filter((d: { kind: string }) => d.kind === 'disappeared').map((d: { name: string }) => d.name),
    ).to.deep.equal(['db-1']);
    // nothing in the west for the east's key
    const scoped = await ok(`/api/v1/inventory/diff?from=${iso(5)}&to=${iso(25)}`, eastOnly);
    expect(scoped.items.map((d: { name: string }) => d.name)).to.not.include('api-1');
    expect(scoped.counts.changed).to.equal(3);

    // web-1 scaled at minute 10 and back at 30: a change and its undoing are no difference, counted or listed
    for (const key of [admin, eastOnly]) {
      const undone = await ok(`/api/v1/inventory/diff?from=${iso(5)}&to=${iso(35)}`, key);
      expect(undone.items.map((d: { name: string }) => d.name)).to.not.include('web-1');
      expect(undone.counts.changed).to.equal(undone.items.filter((d: { kind: string }) => d.kind === 'changed').length);
      expect(undone.counts.changed).to.equal(key === admin ? 3 : 2);
    }

    const walked: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await ok(
        `/api/v1/inventory/diff?from=${iso(5)}&to=${iso(25)}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      if (pages++ > 0) expect(page.counts).to.equal(null);
      walked.push(...page.items.map((d: { ci_id: string }) => d.ci_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(walked).to.deep.equal(diff.items.map((d: { ci_id: string }) => d.ci_id));
    expect(walked).to.deep.equal([...walked].sort());
  });

  it('names moments as baselines that diffs accept in place of timestamps, per tenant and within the history', async () => {
    const create = (body: unknown) => app.request('POST', '/api/v1/baselines', { key: admin, body });
    const release = await create({ name: 'release 4.2', at: iso(5) });
    expect(release.status, JSON.stringify(release.body)).to.equal(201);
    expect(release.body).to.deep.include({
      name: 'release 4.2',
      at: '2026-05-04T08:05:00.000000Z',
      created_by: 'key adm key',
    });
    expect((await create({ name: 'release 4.2', at: iso(6) })).status).to.equal(409);
    expect((await create({ name: '2026-05-04 release' })).status).to.equal(422);
    expect((await create({ name: 'tomorrow', at: new Date(Date.now() + 86_400_000).toISOString() })).status).to.equal(
      422,
    );
    expect((await create({ name: ' padded' })).status).to.equal(422);
    const now = await create({ name: 'now' });
    expect(now.status).to.equal(201);
    // a read-only key reads baselines but does not name them
    expect((await app.request('POST', '/api/v1/baselines', { key: eastOnly, body: { name: 'mine' } })).status).to.equal(
      403,
    );
    expect((await ok('/api/v1/baselines', eastOnly)).items.map((b: { name: string }) => b.name)).to.deep.equal([
      'now',
      'release 4.2',
    ]);

    const byName = await ok(`/api/v1/inventory/diff?from=${encodeURIComponent('release 4.2')}&to=now`);
    const byTime = await ok(`/api/v1/inventory/diff?from=${iso(5)}&to=${encodeURIComponent(now.body.at)}`);
    expect(byName.from).to.equal('2026-05-04T08:05:00.000000Z');
    expect(byName.items).to.deep.equal(byTime.items);
    const drift = await ok(
      `/api/v1/configuration-items/${ids['web-1']}/diff?from=${encodeURIComponent('release 4.2')}`,
    );
    // since the release: the sweep of minute 60 made it inactive, and nothing else changed for good
    expect(
      drift.fields.map((f: { field: string; new_value: unknown }) => [
        f.field,
        f.field === 'status' ? f.new_value : '…',
      ]),
    ).to.deep.equal([
      ['status', 'inactive'],
      ['status_updated_at', '…'],
    ]);
    const unknown = await get('/api/v1/inventory/diff?from=no-such-baseline');
    expect(unknown.status).to.equal(422);
    expect(unknown.body.error.details.errors[0]).to.deep.include({ field: 'from' });

    expect((await app.request('DELETE', `/api/v1/baselines/${release.body.id}`, { key: admin })).status).to.equal(204);
    expect((await app.request('DELETE', `/api/v1/baselines/${release.body.id}`, { key: admin })).status).to.equal(404);
    expect((await get(`/api/v1/inventory/diff?from=${encodeURIComponent('release 4.2')}`)).status).to.equal(422);
  });
  it('shows a scoped key a CI moved to another instance at no moment, in lists, their pages and diff counts alike', async () => {
    const { sql } = await testDatabase();
    // minute 70: job-1 moves from the east to the west inside the same source
    await ingest(sql, [{ ...buildPod({ name: 'job-1' }), ci_type: 'k8s.job' }], {
      now: t(70),
      scopeId: 'west',
      mode: 'delta',
    });
    expect(await names(`as_of=${iso(15)}&sort_by=name&sort_order=asc`)).to.include('job-1');
    const seen = await names(`as_of=${iso(15)}&sort_by=name&sort_order=asc`, eastOnly);
    expect(seen).to.deep.equal(['db-1', 'node-1', 'web-1', 'web-2b']);
    expect(await names(`as_of=${iso(15)}&q=job`, eastOnly)).to.deep.equal([]);
    // page by page the walk is the same list: no page comes back short of a CI it may not show
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await ok(
        `/api/v1/configuration-items?as_of=${iso(15)}&sort_by=name&sort_order=asc&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        eastOnly,
      );
      walked.push(...page.items.map((item: { name: string }) => item.name));
      cursor = page.next_cursor;
    } while (cursor);
    expect(walked).to.deep.equal(seen);
    const diff = await ok(`/api/v1/inventory/diff?from=${iso(5)}&to=${iso(25)}`, eastOnly);
    expect(diff.items.map((d: { name: string }) => d.name)).to.not.include('job-1');
    expect(diff.counts.appeared).to.equal(diff.items.filter((d: { kind: string }) => d.kind === 'appeared').length);
    expect(diff.counts.changed).to.equal(diff.items.filter((d: { kind: string }) => d.kind === 'changed').length);
  });
});
