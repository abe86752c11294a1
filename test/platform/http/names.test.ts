import { expect } from 'chai';
import { createKey, useTestApp, type Reply } from '../../support/app.js';
import { buildSource } from '../../support/factories.js';

/** Characters that change how a name reads, or hide in it: a right-to-left override, isolates, zero widths, controls. */
const UNSHOWN = ['\u202E', '\u2066', '\u200F', '\u200B', '\u2060', '\uFEFF', '\u00AD', '\u0007', '\u009B'];
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('names people give and instance ids', () => {
  const app = useTestApp();
  let admin: string;
  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  const post = (path: string, body: unknown) => app.current.request('POST', path, { key: admin, body });
  const put = (path: string, body: unknown) => app.current.request('PUT', path, { key: admin, body });

  function refusedNaming(reply: Reply, field: string, what: string): void {
    expect(reply.status, `${what}: ${reply.text.slice(0, 300)}`).to.equal(422);
    expect(reply.body.error.code, what).to.equal('VALIDATION_ERROR');
    const error = reply.body.error.details.errors.find((e: { field: string }) => e.field === field);
    expect(error, `${what}: ${reply.text.slice(0, 300)}`).to.exist;
    expect(error.message, what).to.match(/bidirectional or invisible format characters/);
  }

  it('refuses bidirectional controls and invisible format characters in every human-given name, with a 422 naming it', async () => {
    const user = await post('/api/v1/users', { name: 'plain', email: null });
    expect(user.status, user.text).to.equal(201);
    const team = await post('/api/v1/teams', { name: 'plain' });
    expect(team.status, team.text).to.equal(201);
    const source = await post('/api/v1/sources', {
      name: 'plain',
      collector_type: 'universal',
      schedule_config: { enabled: false },
    });
    expect(source.status, source.text).to.equal(201);
    const creations: [string, (name: string) => Promise<Reply>, string][] = [
      ['source', (name) => post('/api/v1/sources', { name, collector_type: 'universal' }), 'name'],
      ['source update', (name) => put(`/api/v1/sources/${source.body.id}`, { name }), 'name'],
      [
        'collector',
        (name) => post('/api/v1/sources', { name: 'other', collector_type: 'universal', collector_name: name }),
        'collector_name',
      ],
      ['api key', (name) => post('/api/v1/api-keys', { name, tier: 'ro' }), 'name'],
      ['user', (name) => post('/api/v1/users', { name, email: null }), 'name'],
      ['token', (name) => post(`/api/v1/users/${user.body.id}/tokens`, { name, expires_at: inDays(30) }), 'name'],
      ['team', (name) => post('/api/v1/teams', { name }), 'name'],
      ['team update', (name) => put(`/api/v1/teams/${team.body.id}`, { name }), 'name'],
      [
        'subscription',
        (name) => post('/api/v1/subscriptions', { name, sink: { type: 'webhook', url: 'https://example.com/hook' } }),
        'name',
      ],
      ['saved view', (name) => post('/api/v1/saved-views', { name, view: 'inventory', query: '' }), 'name'],
      ['baseline', (name) => post('/api/v1/baselines', { name }), 'name'],
    ];
    for (const [what, create, field] of creations) {
      for (const character of UNSHOWN) {
        const code = `U+${character.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
        refusedNaming(await create(`invoice${character}fdp.exe`), field, `${what} with ${code}`);
        refusedNaming(await create(`${character}lead`), field, `${what} starting with ${code}`);
      }
    }
    expect(
      (await app.current.get('/api/v1/sources', admin)).body.items.map((s: { name: string }) => s.name),
    ).to.deep.equal(['plain']);
    // the scripts and emoji that need joiners, and other languages, are names like any other
    for (const name of ['می‌خواهم', '👩‍💻 on call', 'Zürich α', 'שלום team']) {
      const made = await post('/api/v1/teams', { name });
      expect(made.status, `${name}: ${made.text}`).to.equal(201);
      expect(made.body.name).to.equal(name);
    }
  });

  it('refuses them in the scope_id of pushes and of data scopes', async () => {
    const sourceId = await buildSource(app.current.sql, 'pushed', 'universal');
    const item = { external_id: 'a', ci_type: 'app.service', name: 'a', raw_data: {} };
    for (const character of UNSHOWN) {
      const scopeId = `cluster${character}-1`;
      refusedNaming(
        await post(`/api/v1/sources/${sourceId}/ingest`, { scope_id: scopeId, items: [item] }),
        'scope_id',
        `push ${JSON.stringify(scopeId)}`,
      );
      const ndjson = await app.current.request(
        'POST',
        `/api/v1/sources/${sourceId}/ingest?scope_id=${encodeURIComponent(scopeId)}`,
        {
          key: admin,
          rawBody: `${JSON.stringify(item)}\n`,
          headers: { 'content-type': 'application/x-ndjson' },
        },
      );
      refusedNaming(ndjson, 'scope_id', `NDJSON push ${JSON.stringify(scopeId)}`);
      const scopes = [{ source_id: sourceId, scope_id: scopeId }];
      refusedNaming(
        await post('/api/v1/api-keys', { name: 'scoped', tier: 'ro', scopes }),
        'scopes.0.scope_id',
        `key scope ${JSON.stringify(scopeId)}`,
      );
    }
    const user = await post('/api/v1/users', { name: 'scoped', email: null });
    refusedNaming(
      await put(`/api/v1/users/${user.body.id}/scopes`, { scopes: [{ source_id: sourceId, scope_id: 'a\u202Eb' }] }),
      'scopes.0.scope_id',
      'user scope',
    );
    expect(await app.current.sql`select 1 from configuration_items where source_id = ${sourceId}`).to.have.lengthOf(0);
    // an ordinary instance id is taken
    const pushed = await post(`/api/v1/sources/${sourceId}/ingest`, { scope_id: 'cluster-1', items: [item] });
    expect(pushed.status, pushed.text).to.equal(200);
  });
});
