import { expect } from 'chai';
import fc from 'fast-check';
import type { Permission } from '../../../src/platform/auth/principal.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';

/**
 * The write side of data scopes: a principal writes only inside the instances its scopes hold.
 * Every check reads the database after the request, not only the status.
 */

const WRITE: Permission[] = [
  'configuration_items:write',
  'configuration_items:read',
  'changes:read',
  'relationships:read',
];

interface StoredCi {
  external_id: string;
  scope_id: string | null;
  name: string;
  status: string;
}

describe('write scopes: a scoped writer writes only inside its instances', () => {
  const app = useTestApp();
  let sourceId: string;
  let writerA: string;
  let readerA: string;
  let readerBoth: string;
  let admin: string;

  const stored = async (): Promise<Map<string, StoredCi>> => {
    const rows = await app.current.sql<StoredCi[]>`
      select external_id, scope_id, name, status from configuration_items where source_id = ${sourceId} order by external_id`;
    return new Map(rows.map((row) => [row.external_id, { ...row }]));
  };
  const changeCount = async () =>
    Number((await app.current.sql<{ n: string }[]>`select count(*) as n from change_records`)[0]!.n);
  const push = (body: unknown, key = writerA) =>
    app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, { key, body });
  const pod = (name: string, extra: Partial<UniversalRecord> = {}) =>
    buildPod({ name, namespace: 'shop', external_id: `pod/${name}`, ...extra });

  beforeEach(async () => {
    const { sql } = app.current;
    sourceId = await buildSource(sql, 'estate', 'universal');
    await ingest(sql, [pod('a-own')], { source: 'estate', scopeId: 'pa' });
    await ingest(
      sql,
      [
        pod('b-victim'),
        pod('b-victim2'),
        pod('b-moved'),
        buildPod({ name: 'b-node', external_id: 'node/b-node', ci_type: 'k8s.node', namespace: null }),
      ],
      {
        source: 'estate',
        scopeId: 'pb',
      },
    );
    writerA = await createKey(sql, 'svc', { permissions: WRITE, scopes: [{ sourceId, scopeId: 'pa' }] });
    readerA = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read', 'changes:read'],
      scopes: [{ sourceId, scopeId: 'pa' }],
    });
    readerBoth = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read', 'changes:read'],
      scopes: [
        { sourceId, scopeId: 'pa' },
        { sourceId, scopeId: 'pb' },
      ],
    });
    admin = await createKey(sql, 'adm');
  });

  it("refuses a deletion of another instance's CI with a 403 naming it, audited, and archives nothing", async () => {
    const before = await stored();
    const changes = await changeCount();
    const reply = await push({ scope_id: 'pa', mode: 'delta', items: [], deletions: ['pod/b-victim'] });
    expect(reply.status).to.equal(403);
    expect(reply.body.error.code).to.equal('HTTP_403');
    expect(reply.body.error.details).to.deep.include({ reason: 'outside_data_scope', external_ids: ['pod/b-victim'] });
    expect(await stored()).to.deep.equal(before);
    expect(await changeCount()).to.equal(changes);
    await app.current.context.audit.flush();
    const [denied] = await app.current.sql<
      { n: string }[]
    >`select count(*) as n from audit_events where event_type = 'permission.denied'`;
    expect(Number(denied!.n)).to.be.greaterThan(0);
  });

  it("refuses to take over another instance's CI by its external id, and writes nothing of the batch", async () => {
    const before = await stored();
    const changes = await changeCount();
    const reply = await push({ scope_id: 'pa', items: [pod('a-new'), pod('b-victim2', { name: 'stolen' })] });
    expect(reply.status).to.equal(403);
    expect(reply.body.error.details.external_ids).to.deep.equal(['pod/b-victim2']);
    const after = await stored();
    expect(after).to.deep.equal(before);
    expect(after.has('pod/a-new')).to.equal(false);
    expect(await changeCount()).to.equal(changes);
  });

  it('refuses the NDJSON form in the same way', async () => {
    const before = await stored();
    const lines = [{ mode: 'delta', scope_id: 'pa' }, pod('b-victim', { name: 'stolen' })]
      .map((line) => JSON.stringify(line))
      .join('\n');
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest?mode=delta&scope_id=pa`, {
      key: writerA,
      rawBody: lines.split('\n').slice(1).join('\n') + '\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(reply.status).to.equal(403);
    expect(await stored()).to.deep.equal(before);
  });

  it('writes, updates and deletes inside its own instance as before', async () => {
    const created = await push({
      scope_id: 'pa',
      items: [pod('a-own', { name: 'a-own' }), pod('a-second')],
      mode: 'delta',
      deletions: [],
    });
    expect(created.status).to.equal(200);
    expect(created.body.created).to.equal(1);
    const deleted = await push({
      scope_id: 'pa',
      mode: 'delta',
      items: [],
      deletions: ['pod/a-second', 'pod/never-seen'],
    });
    expect(deleted.status).to.equal(200);
    expect(deleted.body.archived).to.equal(1);
    const after = await stored();
    expect(after.get('pod/a-second')!.status).to.equal('archived');
    expect(after.get('pod/b-victim')!.status).to.equal('active');
  });

  it('resolves its references only inside its instances: an id of another instance answers as a missing one, and stays unresolved when it moves', async () => {
    const reply = await push({
      scope_id: 'pa',
      mode: 'delta',
      items: [
        pod('a-own', {
          relationships: [
            { type: 'runs_on', target_external_id: 'node/b-node' },
            { type: 'runs_on', target_external_id: 'node/missing' },
          ],
        }),
      ],
    });
    expect(reply.status).to.equal(200);
    expect(reply.body.relationships).to.deep.include({ written: 0, unresolved: 2 });
    const edges = await app.current.sql`select 1 from relationships where source_id = ${sourceId}`;
    expect(edges).to.have.length(0);
    // the missing target arrives in another instance: the reference still does not resolve into it
    await ingest(
      app.current.sql,
      [buildPod({ name: 'missing', external_id: 'node/missing', ci_type: 'k8s.node', namespace: null })],
      { source: 'estate', scopeId: 'pb', mode: 'delta' },
    );
    expect(await app.current.sql`select 1 from relationships where source_id = ${sourceId}`).to.have.length(0);
    // an administrator's reference resolves wherever the target is
    const byAdmin = await push(
      {
        scope_id: 'pa',
        mode: 'delta',
        items: [pod('a-admin', { relationships: [{ type: 'runs_on', target_external_id: 'node/b-node' }] })],
      },
      admin,
    );
    expect(byAdmin.body.relationships).to.deep.include({ written: 1, unresolved: 0 });
  });

  it("resolves a pending reference of a scoped writer when its target arrives inside the writer's instances", async () => {
    await push({
      scope_id: 'pa',
      mode: 'delta',
      items: [pod('a-own', { relationships: [{ type: 'runs_on', target_external_id: 'node/later' }] })],
    });
    const arrived = await push({
      scope_id: 'pa',
      mode: 'delta',
      items: [buildPod({ name: 'later', external_id: 'node/later', ci_type: 'k8s.node', namespace: null })],
    });
    expect(arrived.status).to.equal(200);
    const edges = await app.current.sql<
      { to_scope_id: string }[]
    >`select to_scope_id from relationships where source_id = ${sourceId}`;
    expect(edges.map((edge) => edge.to_scope_id)).to.deep.equal(['pa']);
  });

  it('shows the record of a move only to readers of both instances, on every history route', async () => {
    const moved = await push(
      { scope_id: 'pa', mode: 'delta', items: [pod('b-moved', { name: 'b-moved-renamed' })] },
      admin,
    );
    expect(moved.status).to.equal(200);
    const ciId = (
      await app.current.sql<
        { ci_id: string }[]
      >`select ci_id from configuration_items where external_id = 'pod/b-moved'`
    )[0]!.ci_id;
    const [record] = await app.current.sql<{ moved_from_scope_id: string; scope_id: string }[]>`
      select moved_from_scope_id, scope_id from change_records where ci_id = ${ciId} and change_type = 'UPDATED'`;
    expect(record).to.deep.equal({ moved_from_scope_id: 'pb', scope_id: 'pa' });

    const paths = [
      `/api/v1/ci-changes/${ciId}`,
      `/api/v1/changes?filter=ci_id:eq:${ciId}`,
      `/api/v1/changes/search?query=renamed`,
      `/api/v1/changes/feed?limit=1000`,
    ];
    for (const path of paths) {
      const onlyA = await app.current.get(path, readerA);
      const both = await app.current.get(path, readerBoth);
      expect(both.status, `${path} both`).to.equal(200);
      expect(both.text, `${path} both`).to.include('b-moved-renamed');
      expect(
        onlyA.status === 404 || !onlyA.text.includes('b-moved'),
        `${path} shows pb's values to a reader of pa only`,
      ).to.equal(true);
    }
    const csv = await app.current.request('GET', `/api/v1/changes?filter=ci_id:eq:${ciId}`, {
      key: readerA,
      headers: { accept: 'text/csv' },
    });
    expect(csv.text).to.not.include('b-moved');
    // the counts agree with what each reader can list: the statistics' default window (the
    // pre-aggregate), an explicit window, and the list's totals
    await app.current.request('POST', '/api/v1/changes/refresh-stats', { key: admin });
    const day = 86_400_000;
    const window = `start_date=${encodeURIComponent(new Date(Date.now() - day).toISOString())}&end_date=${encodeURIComponent(new Date(Date.now() + day).toISOString())}`;
    for (const [reader, movesSeen] of [
      [readerA, 0],
      [readerBoth, 1],
    ] as const) {
      const listed = await app.current.get(`/api/v1/changes?limit=1000&${window}`, reader);
      const updates = listed.body.items.filter(
        (item: { change_type: string }) => item.change_type === 'UPDATED',
      ).length;
      expect(updates).to.equal(movesSeen);
      expect(listed.body.total).to.equal(listed.body.items.length);
      for (const path of ['/api/v1/changes/stats', `/api/v1/changes/stats?${window}`]) {
        const stats = await app.current.get(path, reader);
        expect(stats.status, stats.text).to.equal(200);
        expect(stats.body.changes_by_type.updated, path).to.equal(movesSeen);
        expect(stats.body.total_changes, path).to.equal(listed.body.items.length);
      }
    }
    const moveSeen = await app.current.get(`/api/v1/ci-changes/${ciId}`, readerBoth);
    const update = moveSeen.body.items.find((item: { change_type: string }) => item.change_type === 'UPDATED');
    expect(update.changes).to.deep.include({ field: 'scope_id', old_value: 'pb', new_value: 'pa' });
  });

  it('keeps a collection of the whole source and credentials to principals that hold every instance', async () => {
    const scopedAdmin = await createKey(app.current.sql, 'svc', {
      permissions: [
        'credentials:write',
        'credentials:read',
        'collectors:write',
        'collectors:read',
        'sources:read',
        'sources:write',
      ],
      scopes: [{ sourceId, scopeId: 'pa' }],
    });
    const credentials = await app.current.request('PUT', `/api/v1/sources/${sourceId}/credentials`, {
      key: scopedAdmin,
      body: { type: 'token', token: 'secret-token-1' },
    });
    expect(credentials.status).to.equal(403);
    const [held] = await app.current.sql<
      { n: string }[]
    >`select count(*) as n from source_credentials where source_id = ${sourceId}`;
    expect(Number(held!.n)).to.equal(0);
    const [collector] = await app.current.sql<
      { collector_id: string }[]
    >`select collector_id::text from sources where id = ${sourceId}`;
    const trigger = await app.current.request('POST', `/api/v1/collectors/${collector!.collector_id}/trigger`, {
      key: scopedAdmin,
      body: {},
    });
    // the universal type does not collect (409) for a principal allowed to try; a scoped one is refused first
    expect(trigger.status).to.equal(403);
  });

  it("never changes a row outside a randomly scoped writer's instances, whatever it pushes (property)", async () => {
    const instances = ['pa', 'pb', 'pc'];
    const ids = ['pod/x1', 'pod/x2', 'pod/x3', 'pod/b-victim', 'pod/a-own', 'node/b-node'];
    const keys = new Map<string, string>();
    for (const held of [['pa'], ['pb'], ['pa', 'pc']]) {
      keys.set(
        held.join('+'),
        await createKey(app.current.sql, 'svc', {
          permissions: WRITE,
          scopes: held.map((scopeId) => ({ sourceId, scopeId })),
        }),
      );
    }
    // an administrator moves CIs between all three, which the readers' check below needs
    keys.set(instances.join('+'), admin);
    const snapshotOutside = async (held: string[]) =>
      JSON.stringify(
        await app.current.sql`
          select ci_id, external_id, scope_id, name, status, raw_data, updated_at from configuration_items
          where source_id = ${sourceId} and (scope_id is null or scope_id <> all(${held}::text[])) order by ci_id`,
      ) +
      JSON.stringify(
        await app.current.sql`
          select r.from_ci_id, r.to_ci_id, r.relationship_type from relationships r
          where r.source_id = ${sourceId} and (r.to_scope_id <> all(${held}::text[]) or r.from_scope_id <> all(${held}::text[])) order by 1, 2, 3`,
      );
    const item = fc.record({
      id: fc.constantFrom(...ids),
      name: fc.constantFrom('n1', 'n2', 'stolen'),
      target: fc.option(fc.constantFrom(...ids), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...keys.keys()),
        fc.constantFrom(...instances),
        fc.constantFrom('snapshot', 'delta'),
        fc.array(item, { maxLength: 4 }),
        fc.array(fc.constantFrom(...ids), { maxLength: 2 }),
        async (holder, scopeId, mode, items, deletions) => {
          const held = holder.split('+');
          const before = await snapshotOutside(held);
          const records = items.map(({ id, name, target }) =>
            buildPod({
              external_id: id,
              name,
              namespace: 'shop',
              ...(target ? { relationships: [{ type: 'depends_on', target_external_id: target }] } : {}),
            }),
          );
          const itemIds = new Set(records.map((record) => record.external_id));
          const body = {
            scope_id: scopeId,
            mode,
            items: records,
            ...(mode === 'delta' ? { deletions: deletions.filter((id) => !itemIds.has(id)) } : {}),
          };
          const reply = await push(body, keys.get(holder)!);
          expect([200, 403], reply.text).to.include(reply.status);
          if (!held.includes(scopeId)) expect(reply.status).to.equal(403);
          expect(await snapshotOutside(held), `pushed ${JSON.stringify(body)} as ${holder}`).to.equal(before);
        },
      ),
      { numRuns: 40, seed: 20261201 },
    );
    // and every record a reader of pa can fetch holds values from pa only
    const [moves] = await app.current.sql<
      { n: string }[]
    >`select count(*) as n from change_records where moved_from_scope_id is not null`;
    expect(Number(moves!.n), 'the pushes moved CIs between instances').to.be.greaterThan(0);
    for (const [reader, sees] of [
      [readerA, ['pa']],
      [readerBoth, ['pa', 'pb']],
    ] as const) {
      const seen = await app.current.get('/api/v1/changes?limit=1000', reader);
      expect(seen.status, seen.text).to.equal(200);
      expect(seen.body.items.length).to.be.greaterThan(0);
      for (const record of seen.body.items as { id: string }[]) {
        const [row] = await app.current.sql<{ scope_id: string; moved_from_scope_id: string | null }[]>`
          select scope_id, moved_from_scope_id from change_records where id = ${record.id} and tenant_id = ${DEFAULT_TENANT_ID}`;
        expect(sees).to.include(row!.scope_id);
        if (row!.moved_from_scope_id !== null) expect(sees).to.include(row!.moved_from_scope_id);
      }
    }
  });
});
