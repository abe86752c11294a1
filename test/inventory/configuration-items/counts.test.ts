import { expect } from 'chai';
import { foldCiCounts } from '../../../src/inventory/configuration-items/counts.js';
import { sweepLifecycle } from '../../../src/inventory/lifecycle/sweep.js';
import { createKey, useTestApp } from '../../support/app.js';
import { countsAgainstTable } from '../../support/counts.js';
import { onRealPostgres } from '../../support/db.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';
import { planNodes } from '../../support/plans.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = new Date('2026-04-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

describe('CI counts', function () {
  this.timeout(60_000);
  const app = useTestApp();

  const expectInStep = async (when: string) => {
    const { kept, counted } = await countsAgainstTable(app.current.sql);
    expect(kept, when).to.deep.equal(counted);
  };

  it('equal count(*) after every kind of write, before and after folding', async () => {
    const { sql } = app.current;
    const pods = Array.from({ length: 12 }, (_, i) => buildPod({ name: `c${i}` }));
    await ingest(sql, pods, { now: at(0), scopeId: 'c1', batchSize: 5 });
    await expectInStep('created');
    // a type change, a move to another instance, a change of content
    await ingest(sql, [{ ...pods[0]!, ci_type: 'k8s.job' }, pods[1]!, { ...pods[2]!, raw_data: { x: 1 } }], {
      now: at(HOUR),
      scopeId: 'c2',
    });
    await expectInStep('updated, retyped, moved');
    await ingest(sql, [], {
      now: at(2 * HOUR),
      scopeId: 'c1',
      mode: 'delta',
      deletions: [pods[3]!.external_id, pods[4]!.external_id],
    });
    await expectInStep('archived by a delta');
    const admin = await createKey(sql, 'adm');
    const reply = await app.current.request(
      'DELETE',
      `/api/v1/configuration-items/${await ciIdOf(sql, pods[5]!.external_id)}`,
      { key: admin },
    );
    expect(reply.status).to.equal(200);
    await expectInStep('archived by DELETE');
    expect(await foldCiCounts(sql)).to.be.greaterThan(0);
    await expectInStep('folded');
    const settings = {
      inactiveAfterMs: DAY,
      archiveInactiveAfterMs: 2 * DAY,
      archiveRetentionMs: 3 * DAY,
      batchSize: 4,
    };
    await sweepLifecycle(sql, settings, at(DAY + 3 * HOUR));
    await expectInStep('inactivated by the sweep');
    await ingest(sql, [pods[6]!, pods[3]!], { now: at(DAY + 4 * HOUR), scopeId: 'c1' });
    await expectInStep('reactivated');
    await sweepLifecycle(sql, settings, at(4 * DAY));
    await sweepLifecycle(sql, settings, at(8 * DAY));
    expect(await sql`select 1 from configuration_items`).to.have.length.below(12);
    await expectInStep('archived and removed by the sweep');
    // a batch that fails rolls its deltas back with it
    await sql.unsafe(`
      create function refuse_nodes() returns trigger language plpgsql as $$
      begin if new.ci_type = 'k8s.node' then raise exception 'interrupted'; end if; return new; end $$;
      create trigger refuse_nodes before insert on configuration_items for each row execute function refuse_nodes();`);
    try {
      const node = { ...buildPod({ name: 'never' }), external_id: 'node/never', ci_type: 'k8s.node' };
      await ingest(sql, [buildPod({ name: 'first-batch' }), node], {
        now: at(8 * DAY),
        scopeId: 'c1',
        batchSize: 1,
      }).catch(() => undefined);
    } finally {
      await sql.unsafe('drop trigger refuse_nodes on configuration_items; drop function refuse_nodes();');
    }
    await expectInStep('after a failed batch');
    await foldCiCounts(sql);
    await expectInStep('folded again');
  });

  it('serve list totals for status, type, namespace and instance filters exactly, for every key', async () => {
    const { sql } = app.current;
    const admin = await createKey(sql, 'adm');
    const { sourceId } = await ingest(
      sql,
      Array.from({ length: 7 }, (_, i) =>
        buildPod({ name: `p${i}`, namespace: i % 3 ? 'default' : i % 2 ? 'kube-system' : null }),
      ),
      { scopeId: 'c1' },
    );
    await ingest(
      sql,
      [{ ...buildPod({ name: 'n1' }), external_id: 'node/n1', ci_type: 'k8s.node' }, buildPod({ name: 'p-c2' })],
      { scopeId: 'c2' },
    );
    await ingest(sql, [], { scopeId: 'c1', mode: 'delta', deletions: ['pod/default/p0'] });
    await foldCiCounts(sql);
    await ingest(sql, [buildPod({ name: 'after-fold' })], { scopeId: 'c1' });
    const scoped = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read'],
      scopes: [{ sourceId, scopeId: 'c1' }],
    });
    for (const key of [admin, scoped]) {
      for (const query of [
        '',
        'status=all',
        'status=archived',
        'filter=ci_type:eq:k8s.node',
        'filter=ci_type:ne:k8s.node&status=all',
        'filter=status:in:active,archived',
        'filter=ci_type:in:k8s.pod,k8s.job&include_type_data=true',
        'filter=namespace:eq:default',
        'filter=namespace:eq:kube-system&filter=ci_type:eq:k8s.pod',
        'filter=namespace:ne:default&status=all',
        'filter=namespace:in:default,kube-system',
        'filter=scope_id:eq:c2',
        'filter=scope_id:eq:c1&filter=namespace:eq:default&filter=status:eq:active',
      ]) {
        const reply = await app.current.get(`/api/v1/configuration-items?limit=1000&${query}`, key);
        expect(reply.status, reply.text).to.equal(200);
        expect({ total: reply.body.total, exact: reply.body.total_exact }, query).to.deep.equal({
          total: reply.body.items.length,
          exact: true,
        });
      }
    }
  });

  it('answer namespace and instance filters from the counts, without counting the CIs', async () => {
    const { sql } = app.current;
    const admin = await createKey(sql, 'adm');
    await ingest(
      sql,
      [
        buildPod({ name: 'a', namespace: 'team-a' }),
        buildPod({ name: 'b', namespace: 'team-a' }),
        buildPod({ name: 'c', namespace: 'team-b' }),
      ],
      { scopeId: 'c1' },
    );
    await foldCiCounts(sql);
    // a count put wrong on purpose shows through where the counts answer, and only there
    await sql`update ci_counts set cis = cis + 1000 where namespace = 'team-a'`;
    const total = async (query: string) =>
      (await app.current.get(`/api/v1/configuration-items?${query}`, admin)).body.total;
    expect(await total('filter=namespace:eq:team-a')).to.equal(1002);
    expect(await total('filter=namespace:eq:team-a&filter=scope_id:eq:c1')).to.equal(1002);
    expect(await total('filter=namespace:eq:team-b')).to.equal(1);
    expect(await total('filter=namespace:eq:team-a&filter=name:eq:a'), 'a name filter is counted on the CIs').to.equal(
      1,
    );
    // without a namespace filter the counts by type answer: a few rows, whatever the namespaces
    expect(await total(''), 'the counts by type are right').to.equal(3);
    await sql`update ci_type_counts set cis = cis + 500 where scope_id = 'c1'`;
    expect(await total('')).to.equal(503);
    expect(await total('filter=ci_type:eq:k8s.pod&filter=status:eq:active')).to.equal(503);
    expect(await total('filter=namespace:eq:team-b'), 'a namespace filter reads the counts with namespaces').to.equal(
      1,
    );
  });

  it("read one namespace's counts through an index led by the namespace, not every count of the type", async () => {
    const { sql } = app.current;
    // seven instances of 400 namespaces, as the list benchmark's inventory
    await sql`
      insert into ci_counts (tenant_id, source_id, scope_id, status, ci_type, namespace, cis)
      select ${DEFAULT_TENANT_ID}, ${await buildSource(sql, 'many')}, 'c' || i, 'active', 'k8s.pod', 'team-' || n, 1
      from generate_series(1, 7) as i, generate_series(1, 400) as n`;
    await sql`analyze ci_counts`;
    const nodes = await planNodes(
      sql,
      'select sum(cis) from ci_counts where tenant_id = $1 and status = any($2::text[]) and ci_type = $3 and namespace = $4',
      [DEFAULT_TENANT_ID, '{active}', 'k8s.pod', 'team-7'],
      { analyze: true },
    );
    const read = nodes.find((node) => node['Relation Name'] === 'ci_counts');
    expect(read?.['Index Name']).to.equal('ci_counts_by_namespace');
    expect(read?.['Actual Rows']).to.equal(7);
  });

  (onRealPostgres ? describe : describe.skip)(
    'with several sessions (skipped on the embedded database: concurrent reconciles need a PostgreSQL server, PGlite has one session)',
    () => {
      it('equal count(*) after concurrent reconciles of different sources', async () => {
        const { sql } = app.current;
        for (let round = 0; round < 5; round++) {
          await Promise.all(
            [0, 1, 2, 3].map((source) =>
              ingest(
                sql,
                Array.from({ length: 40 }, (_, i) =>
                  buildPod({
                    name: `s${source}-${i}`,
                    replicas: round,
                    ...(i % 7 === round ? { ci_type: 'k8s.job' } : {}),
                  }),
                ),
                {
                  source: `src-${source}`,
                  scopeId: `c${round % 2}`,
                  batchSize: 9,
                },
              ),
            ),
          );
        }
        await expectInStep('concurrent reconciles');
      });
    },
  );
});
