import { expect } from 'chai';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

interface Listed {
  related_ci_id: string;
  related_ci_name: string;
  related_ci_status: string;
  ended_at: string | null;
}

interface Graph {
  nodes: { ci_id: string; name: string; status: string; depth: number }[];
  edges: { from: string; to: string; relationship_type: string; ended_at?: string }[];
}

/**
 * A deployment that rolled out: its old replica set and that one's pods were deleted, so the
 * collector no longer reports the relationships that led to them. Until they are removed for good,
 * a walk that asks for inactive and archived CIs still reaches them along what they had.
 */
describe('relationships left behind by CIs that left the active inventory', function () {
  let app: TestApp;
  let admin: string;
  let scoped: string;
  let source: number;
  const ids = new Map<string, string>();

  const item = (kind: string, name: string, relationships: { type: string; target_external_id: string }[] = []) => ({
    external_id: `${kind}/shop/${name}`,
    ci_type: `k8s.${kind}`,
    name,
    namespace: 'shop',
    raw_data: { metadata: { name } },
    relationships,
  });
  const manages = (kind: string, ...names: string[]) =>
    names.map((name) => ({ type: 'manages', target_external_id: `${kind}/shop/${name}` }));

  async function push(body: object): Promise<void> {
    const pushed = await app.request('POST', `/api/v1/sources/${source}/ingest`, {
      key: admin,
      body: { scope_id: 'east', ...body },
    });
    expect(pushed.status, pushed.text).to.equal(200);
  }

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    app = await startTestApp();
    admin = await createKey(app.sql, 'adm');
    const created = await app.request('POST', '/api/v1/sources', {
      key: admin,
      body: { name: 'agents', collector_type: 'universal' },
    });
    source = (created.body as { id: number }).id;
    scoped = await createKey(app.sql, 'ro', { scopes: [{ sourceId: String(source), scopeId: 'west' }] });
    await push({
      items: [
        item('deployment', 'checkout', manages('replicaset', 'checkout-old')),
        item('replicaset', 'checkout-old', manages('pod', 'checkout-old-a', 'checkout-old-b')),
        item('pod', 'checkout-old-a'),
        item('pod', 'checkout-old-b'),
        item('pod', 'moved'),
        item('replicaset', 'adopter'),
      ],
    });
    // a rollout: the new replica set and pods arrive, the old ones are deleted
    await push({
      mode: 'delta',
      items: [
        item('deployment', 'checkout', manages('replicaset', 'checkout-new')),
        item('replicaset', 'checkout-new', manages('pod', 'checkout-new-a', 'moved')),
        item('pod', 'checkout-new-a'),
      ],
      deletions: ['replicaset/shop/checkout-old', 'pod/shop/checkout-old-a', 'pod/shop/checkout-old-b'],
    });
    for (const row of await app.sql<{ ci_id: string; name: string }[]>`select ci_id, name from configuration_items`)
      ids.set(row.name, row.ci_id);
  });

  after(async () => {
    await app?.close();
  });

  const listed = async (name: string, query = '', key = admin) => {
    const response = await app.request('GET', `/api/v1/configuration-items/${ids.get(name)}/relationships${query}`, {
      key,
    });
    expect(response.status, response.text).to.equal(200);
    return response.body as { items: Listed[]; total: number };
  };

  it('lists what an archived replica set managed, marked with when it ended, only when inactive and archived ones are asked for', async () => {
    const active = await listed('checkout');
    expect(active.items.map((row) => row.related_ci_name)).to.deep.equal(['checkout-new']);
    expect(active.items[0]!.ended_at).to.equal(null);

    const all = await listed('checkout', '?include_inactive=true&sort_by=related_ci_name');
    expect(all.items.map((row) => [row.related_ci_name, row.related_ci_status, row.ended_at !== null])).to.deep.equal([
      ['checkout-new', 'active', false],
      ['checkout-old', 'archived', true],
    ]);
    expect(all.total).to.equal(2);

    const old = await listed('checkout-old', '?include_inactive=true&sort_by=related_ci_name');
    expect(old.items.map((row) => [row.related_ci_name, row.related_ci_status])).to.deep.equal([
      ['checkout', 'active'],
      ['checkout-old-a', 'archived'],
      ['checkout-old-b', 'archived'],
    ]);
    expect(old.total).to.equal(3);
  });

  it('walks from the deployment to the pods its old replica set ran, with those edges marked ended', async () => {
    const response = await app.request(
      'GET',
      `/api/v1/configuration-items/${ids.get('checkout')}/graph?direction=downstream&depth=2&include_inactive=true`,
      { key: admin },
    );
    expect(response.status, response.text).to.equal(200);
    const graph = response.body as Graph;
    expect(graph.nodes.map((node) => `${node.depth} ${node.name} ${node.status}`).sort()).to.deep.equal([
      '0 checkout active',
      '1 checkout-new active',
      '1 checkout-old archived',
      '2 checkout-new-a active',
      '2 checkout-old-a archived',
      '2 checkout-old-b archived',
      '2 moved active',
    ]);
    // the deployment's link to its old replica set ended; the archived replica set's own links were never rewritten
    expect(graph.edges.filter((edge) => edge.ended_at).map((edge) => [edge.from, edge.to])).to.deep.equal([
      [ids.get('checkout'), ids.get('checkout-old')],
    ]);
    expect(graph.edges).to.have.length(6);

    const activeOnly = await app.request(
      'GET',
      `/api/v1/configuration-items/${ids.get('checkout')}/graph?direction=downstream&depth=2`,
      { key: admin },
    );
    expect((activeOnly.body as Graph).nodes.map((node) => node.name).sort()).to.deep.equal([
      'checkout',
      'checkout-new',
      'checkout-new-a',
      'moved',
    ]);
    expect((activeOnly.body as Graph).edges.some((edge) => edge.ended_at)).to.equal(false);
  });

  it("brings the archived pods' history into the changes around the deployment", async () => {
    const response = await app.request(
      'GET',
      `/api/v1/changes?related_to=${ids.get('checkout')}&filter=change_type:eq:DELETED&limit=50`,
      { key: admin },
    );
    expect(response.status, response.text).to.equal(200);
    const names = (response.body as { items: { ci_name: string }[] }).items.map((change) => change.ci_name).sort();
    expect(names).to.deep.equal(['checkout-old', 'checkout-old-a', 'checkout-old-b']);
  });

  it('does not lead back to a CI that is still active and merely changed hands', async () => {
    // `moved` was never managed by the old replica set, and `adopter` never managed anything: a
    // relationship that ended while both ends stayed active is history, not something left behind
    await push({ mode: 'delta', items: [item('replicaset', 'adopter', manages('pod', 'moved'))] });
    await push({ mode: 'delta', items: [item('replicaset', 'adopter')] });
    const adopter = await listed('adopter', '?include_inactive=true');
    expect(adopter.items).to.deep.equal([]);
  });

  it('shows a key outside the instance none of it', async () => {
    const response = await app.request(
      'GET',
      `/api/v1/configuration-items/${ids.get('checkout')}/relationships?include_inactive=true`,
      { key: scoped },
    );
    expect(response.status).to.equal(404);
  });

  it('stops walking a relationship once its CI is removed for good', async () => {
    await app.sql`delete from configuration_items where ci_id = ${ids.get('checkout-old-b')!}`;
    const old = await listed('checkout-old', '?include_inactive=true&sort_by=related_ci_name');
    expect(old.items.map((row) => row.related_ci_name)).to.deep.equal(['checkout', 'checkout-old-a']);
  });
});
