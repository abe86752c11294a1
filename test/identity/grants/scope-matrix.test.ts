import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { apiRoutes } from '../../../src/app.js';
import { issueApiKey } from '../../../src/platform/auth/api-keys.js';
import type { Permission } from '../../../src/platform/auth/principal.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { ensureSource, insertSource, provisionCollector } from '../../../src/collection/sources/store.js';
import { setSuperadmin } from '../../../src/identity/users/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { resetDatabase, TEST_SECRET, testDatabase } from '../../support/db.js';
import { buildPod } from '../../support/factories.js';

/**
 * Every route that returns inventory data, for principals of every kind in two tenants: rows out
 * of scope never appear, details out of scope are 404, a missing permission is 403 (and audited),
 * another tenant's data is never visible. The route list comes from the router: a new route must
 * be added here, or to EXEMPT with the reason it returns no inventory data.
 */

type Ci = 'a1' | 'a2' | 'b1';
/** The sources: `a` holds a1 and a2, `a2` holds nothing (tenant A), `b` holds b1 (tenant B). */
type Src = 'a' | 'a2' | 'b';
interface PrincipalCase {
  name: string;
  key: string;
  /** The CIs it may see; undefined: its credential is refused (401). */
  sees: Ci[] | undefined;
  /** The sources (and so collectors) it may see. */
  sources: Src[];
  permissions: Set<Permission> | 'all';
  actorId?: string;
}

interface World {
  app: TestApp;
  ids: Record<Ci, string>;
  sources: Record<Src, string>;
  collectors: Record<Src, string>;
  window: string;
}

interface MatrixRoute {
  /** What the route returns for this principal, given what it may see. */
  check(world: World, who: PrincipalCase, allowed: boolean): Promise<void>;
}

/** Identities need hosts, which this world has none of: they have a matrix of their own. */
const IDENTITY_MATRIX =
  'the identity matrix, over hosts in two instances and two tenants (test/inventory/identities/access.test.ts)';

/** Quality reads counters and per-CI verdicts kept by a worker: a matrix of its own, in two tenants. */
const QUALITY_MATRIX =
  'the quality matrix, over CIs in two instances and two tenants (test/inventory/quality/access.test.ts)';

/** Change rules and the fold window are the tenant's, and their readings need ownership: a matrix of their own. */
const CHANGE_RULES_MATRIX =
  'the change-rules matrix, over records in two instances and two tenants (test/history/change-rules/access.test.ts)';

const EXEMPT: Record<string, string> = {
  'GET /api/v1/subscriptions':
    'listed only for the owner and principals covering its rights (matrix of its own: test/history/subscriptions/access.test.ts)',
  'POST /api/v1/subscriptions': 'a write; the caller becomes the owner (tested with the subscriptions)',
  'GET /api/v1/subscriptions/{id}': 'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'PUT /api/v1/subscriptions/{id}': 'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'DELETE /api/v1/subscriptions/{id}': 'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'POST /api/v1/subscriptions/{id}/rotate-secret':
    'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'GET /api/v1/subscriptions/{id}/deliveries':
    'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'POST /api/v1/subscriptions/{id}/deliveries/{delivery_id}/redeliver':
    'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'POST /api/v1/subscriptions/{id}/test':
    'owner or covering principals only (test/history/subscriptions/access.test.ts)',
  'DELETE /api/v1/configuration-items/{ci_id}': 'a write; scoped deletes are tested with the configuration-items API',
  'POST /api/v1/sources': 'a write by principals with access to all data (tested with the sources API)',
  'PUT /api/v1/sources/{source_id}': 'a write (tested with the sources API)',
  'DELETE /api/v1/sources/{source_id}': 'a write (tested with the sources API)',
  'PUT /api/v1/sources/{source_id}/health': 'a write (tested with the sources API)',
  'POST /api/v1/collectors/{collector_id}/sources': 'a write (tested with the sources API)',
  'PUT /api/v1/sources/{source_id}/credentials': 'a write of secrets, never returned (tested with the credentials)',
  'DELETE /api/v1/sources/{source_id}/credentials': 'a write (tested with the credentials)',
  'GET /api/v1/sources/{source_id}/credentials/reveal':
    'returns secrets, not inventory: permissioned, scoped and audited (tested with the credentials)',
  'POST /api/v1/collectors/{collector_id}/trigger': 'a write (tested with the collection runs)',
  'GET /api/v1/collection-runs/{run_id}': 'run metadata of a visible source (tested with the collection runs)',
  'POST /api/v1/collectors': 'gone (410)',
  'PUT /api/v1/collectors': 'gone (410)',
  'PATCH /api/v1/collectors': 'gone (410)',
  'DELETE /api/v1/collectors': 'gone (410)',
  'POST /api/v1/collectors/{collector_id}': 'gone (410)',
  'PUT /api/v1/collectors/{collector_id}': 'gone (410)',
  'PATCH /api/v1/collectors/{collector_id}': 'gone (410)',
  'DELETE /api/v1/collectors/{collector_id}': 'gone (410)',
  'POST /api/v1/sources/{source_id}/ingest': 'a write; scoped pushes are tested with the ingest route',
  'POST /api/v1/changes/refresh-stats': 'maintenance: returns counts of rows folded, no inventory data',
  'GET /api/v1/me': 'the caller itself',
  'GET /auth/login': 'sign-in redirect',
  'GET /auth/callback': 'sign-in redirect',
  'POST /auth/logout': 'sign-out',
  'GET /auth/me': 'the caller itself',
  'GET /auth/methods': 'which sign-in methods are configured',
  'POST /auth/session': "sign-in with a key; the session acts as the key (tested with the web interface's server side)",
  'GET /api/v1/users': 'identity administration, no inventory data',
  'POST /api/v1/users': 'identity administration',
  'GET /api/v1/users/{user_id}': 'identity administration',
  'POST /api/v1/users/{user_id}/deactivate': 'identity administration',
  'POST /api/v1/users/{user_id}/reactivate': 'identity administration',
  'PUT /api/v1/users/{user_id}/superadmin': 'identity administration',
  'PUT /api/v1/users/{user_id}/permissions': 'identity administration',
  'PUT /api/v1/users/{user_id}/scopes': 'identity administration',
  'GET /api/v1/teams': 'identity administration',
  'POST /api/v1/teams': 'identity administration',
  'GET /api/v1/teams/{team_id}': 'identity administration',
  'PUT /api/v1/teams/{team_id}': 'identity administration',
  'DELETE /api/v1/teams/{team_id}': 'identity administration',
  'PUT /api/v1/teams/{team_id}/members/{user_id}': 'identity administration',
  'DELETE /api/v1/teams/{team_id}/members/{user_id}': 'identity administration',
  'PUT /api/v1/teams/{team_id}/permissions': 'identity administration',
  'PUT /api/v1/teams/{team_id}/scopes': 'identity administration',
  'GET /api/v1/saved-views':
    "names of URL states, no inventory data: opening one reads under the opener's scopes (tested with the saved views)",
  'POST /api/v1/saved-views': 'a write of a URL state (tested with the saved views)',
  'DELETE /api/v1/saved-views/{view_id}': 'a write (tested with the saved views)',
  'GET /api/v1/tokens': "the caller's own tokens",
  'POST /api/v1/tokens': "the caller's own tokens",
  'DELETE /api/v1/tokens/{token_id}': "the caller's own tokens",
  'GET /api/v1/users/{user_id}/tokens': 'identity administration',
  'POST /api/v1/users/{user_id}/tokens': 'identity administration',
  'DELETE /api/v1/users/{user_id}/tokens/{token_id}': 'identity administration',
  'GET /api/v1/api-keys': 'key administration',
  'POST /api/v1/api-keys': 'key administration',
  'GET /api/v1/api-keys/{key_id}': 'key administration',
  'DELETE /api/v1/api-keys/{key_id}': 'key administration',
  'GET /api/v1/audit-events': 'the security audit log (tenant-bound, tested with the audit log)',
  'GET /api/v1/baselines':
    "named moments of the tenant, no inventory data: a diff against one reads under the reader's scopes (tested with the time machine)",
  'POST /api/v1/baselines': 'a write of a named moment (tested with the time machine)',
  'DELETE /api/v1/baselines/{baseline_id}': 'a write (tested with the time machine)',
  'GET /api/v1/identities': IDENTITY_MATRIX,
  'GET /api/v1/identities/{identity_id}': IDENTITY_MATRIX,
  'GET /api/v1/identities/{identity_id}/graph': IDENTITY_MATRIX,
  'GET /api/v1/identities/conflicts': IDENTITY_MATRIX,
  'GET /api/v1/identities/decisions': IDENTITY_MATRIX,
  'POST /api/v1/identities/decisions': IDENTITY_MATRIX,
  'DELETE /api/v1/identities/decisions/{decision_id}': IDENTITY_MATRIX,
  'POST /api/v1/identities/identify': IDENTITY_MATRIX,
  'GET /api/v1/identities/rules': IDENTITY_MATRIX,
  'PUT /api/v1/identities/rules': IDENTITY_MATRIX,
  'GET /api/v1/quality': QUALITY_MATRIX,
  'GET /api/v1/quality/settings': QUALITY_MATRIX,
  'PUT /api/v1/quality/settings': QUALITY_MATRIX,
  'GET /api/v1/quality/rules': QUALITY_MATRIX,
  'POST /api/v1/quality/rules/preview': QUALITY_MATRIX,
  'GET /api/v1/quality/rules/{rule_id}': QUALITY_MATRIX,
  'POST /api/v1/quality/rules': QUALITY_MATRIX,
  'PUT /api/v1/quality/rules/{rule_id}': QUALITY_MATRIX,
  'DELETE /api/v1/quality/rules/{rule_id}': QUALITY_MATRIX,
  'GET /api/v1/quality/configuration-items/{ci_id}': QUALITY_MATRIX,
  'GET /api/v1/quality/{measure}/items': QUALITY_MATRIX,
  'GET /api/v1/quality/rules/items': QUALITY_MATRIX,
  'GET /api/v1/change-rules': CHANGE_RULES_MATRIX,
  'POST /api/v1/change-rules': CHANGE_RULES_MATRIX,
  'GET /api/v1/change-rules/{rule_id}': CHANGE_RULES_MATRIX,
  'PUT /api/v1/change-rules/{rule_id}': CHANGE_RULES_MATRIX,
  'DELETE /api/v1/change-rules/{rule_id}': CHANGE_RULES_MATRIX,
  'POST /api/v1/change-rules/apply': CHANGE_RULES_MATRIX,
  'GET /api/v1/change-rules/applications/{run_id}': CHANGE_RULES_MATRIX,
  'GET /api/v1/change-settings': CHANGE_RULES_MATRIX,
  'PUT /api/v1/change-settings': CHANGE_RULES_MATRIX,
};

const sorted = (values: Iterable<string>) => [...values].sort();
const visibleIds = (world: World, who: PrincipalCase) => sorted((who.sees ?? []).map((ci) => world.ids[ci]));

async function expectRefused(reply: Reply, who: PrincipalCase, allowed: boolean): Promise<boolean> {
  if (who.sees === undefined) {
    expect(reply.status, `${who.name}: ${reply.text}`).to.equal(401);
    return true;
  }
  if (!allowed) {
    expect(reply.status, `${who.name}: ${reply.text}`).to.equal(403);
    return true;
  }
  expect(reply.status, `${who.name}: ${reply.text}`).to.equal(200);
  return false;
}

const visibleSources = (world: World, who: PrincipalCase, of: 'sources' | 'collectors') =>
  sorted(who.sources.map((s) => world[of][s]));

/** A route about one source or collector: 200 for those the principal may see, 404 for the others. */
function eachOf(of: 'sources' | 'collectors', path: (id: string) => string): MatrixRoute {
  return {
    async check(world, who, allowed) {
      for (const src of ['a', 'a2', 'b'] as Src[]) {
        const reply = await world.app.get(path(world[of][src]), who.key);
        if (who.sees === undefined || !allowed) {
          await expectRefused(reply, who, allowed);
          continue;
        }
        expect(reply.status, `${who.name} ${of} ${src}: ${reply.text}`).to.equal(who.sources.includes(src) ? 200 : 404);
      }
    },
  };
}

/**
 * A route about one CI, asked for each CI: refused without the permission, 404 for a CI beyond
 * the principal's scope, and for one inside it 200 with `seen` checking the answer. `also`: a
 * permission the route needs beyond its declared one.
 */
function eachCi(
  path: (id: string) => string,
  seen: (reply: Reply, ci: Ci, who: PrincipalCase, world: World) => void,
  also?: Permission,
): MatrixRoute {
  return {
    async check(world, who, declared) {
      const allowed = declared && (also === undefined || who.permissions === 'all' || who.permissions.has(also));
      for (const ci of ['a1', 'a2', 'b1'] as Ci[]) {
        const reply = await world.app.get(path(world.ids[ci]), who.key);
        if (who.sees === undefined || !allowed) {
          await expectRefused(reply, who, allowed);
          continue;
        }
        if (!who.sees.includes(ci)) {
          expect(reply.status, `${who.name} ${ci}`).to.equal(404);
          continue;
        }
        expect(reply.status, `${who.name} ${ci}: ${reply.text}`).to.equal(200);
        seen(reply, ci, who, world);
      }
    },
  };
}

/** a1 and a2 point at each other: the other one, when the principal sees it too. */
const otherSeen = (ci: Ci, who: PrincipalCase): { other: Ci | undefined; both: boolean } => {
  const other = ci === 'a1' ? 'a2' : ci === 'a2' ? 'a1' : undefined;
  return { other, both: other !== undefined && who.sees!.includes(other) };
};

/** Whether the principal holds a permission beyond the route's own. */
const holds = (who: PrincipalCase, permission: Permission) =>
  who.permissions === 'all' || who.permissions.has(permission);

/**
 * The query language, sent as POST or as a link: a match of everything, a count, a hop (a1 and a2
 * depend on each other: each leads to the other, hidden when out of scope), a history predicate
 * with the records beside, and the CSV form. A hop also needs relationships:read, history changes:read.
 */
function queryRoute(method: 'POST' | 'GET'): MatrixRoute {
  const ask = (world: World, who: PrincipalCase, query: string, accept?: string) =>
    method === 'POST'
      ? world.app.request('POST', '/api/v1/query', {
          key: who.key,
          body: { query },
          ...(accept ? { headers: { accept } } : {}),
        })
      : world.app.request('GET', `/api/v1/query?q=${encodeURIComponent(query)}`, {
          key: who.key,
          ...(accept ? { headers: { accept } } : {}),
        });
  const idsOf = (reply: Reply) => sorted(reply.body.items.map((item: { ci_id: string }) => item.ci_id));
  return {
    async check(world, who, allowed) {
      const all = await ask(world, who, '* | limit 1000');
      if (await expectRefused(all, who, allowed)) return;
      expect(idsOf(all), `${who.name} *`).to.deep.equal(visibleIds(world, who));
      const counted = await ask(world, who, '* | count by namespace');
      expect(counted.status, counted.text).to.equal(200);
      const total = counted.body.groups.reduce((sum: number, g: { count: number }) => sum + g.count, 0);
      expect(total, `${who.name} count`).to.equal(who.sees!.length);

      const hop = await ask(world, who, '* -[*]-> *');
      if (!holds(who, 'relationships:read')) expect(hop.status, `${who.name} hop`).to.equal(403);
      else {
        expect(hop.status, hop.text).to.equal(200);
        const both = (['a1', 'a2'] as Ci[]).every((ci) => who.sees!.includes(ci));
        const alone = (['a1', 'a2'] as Ci[]).filter((ci) => who.sees!.includes(ci)).length === 1;
        expect(idsOf(hop), `${who.name} hop`).to.deep.equal(both ? visibleIds(world, who) : []);
        expect(hop.body.hidden, `${who.name} hidden`).to.equal(alone ? 1 : 0);
      }

      const changed = await ask(world, who, 'changed since 2000-01-01 | with changes');
      if (!holds(who, 'changes:read')) expect(changed.status, `${who.name} history`).to.equal(403);
      else {
        expect(changed.status, changed.text).to.equal(200);
        expect(idsOf(changed), `${who.name} changed`).to.deep.equal(visibleIds(world, who));
        for (const item of changed.body.items as { ci_id: string; changes: unknown[] }[])
          expect(item.changes, `${who.name} records`).to.not.be.empty;
      }

      const csv = await ask(world, who, '* | fields name', 'text/csv');
      expect(csv.status, csv.text).to.equal(200);
      const csvIds = csv.text
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.split(',')[0]!);
      expect(sorted(csvIds), `${who.name} CSV`).to.deep.equal(visibleIds(world, who));
    },
  };
}

const MATRIX: Record<string, MatrixRoute> = {
  'GET /api/v1/sources': {
    async check(world, who, allowed) {
      const reply = await world.app.get('/api/v1/sources', who.key);
      if (await expectRefused(reply, who, allowed)) return;
      expect(sorted(reply.body.items.map((s: { id: number }) => String(s.id))), who.name).to.deep.equal(
        visibleSources(world, who, 'sources'),
      );
    },
  },
  'GET /api/v1/sources/{source_id}': eachOf('sources', (id) => `/api/v1/sources/${id}`),
  'GET /api/v1/collectors': {
    async check(world, who, allowed) {
      const reply = await world.app.get('/api/v1/collectors', who.key);
      if (await expectRefused(reply, who, allowed)) return;
      expect(sorted(new Set(reply.body.items.map((c: { id: number }) => String(c.id)))), who.name).to.deep.equal(
        sorted(new Set(visibleSources(world, who, 'collectors'))),
      );
    },
  },
  'GET /api/v1/collectors/health/all': {
    async check(world, who, allowed) {
      const reply = await world.app.get('/api/v1/collectors/health/all', who.key);
      if (await expectRefused(reply, who, allowed)) return;
      expect(sorted(new Set(reply.body.collectors.map((c: { id: number }) => String(c.id)))), who.name).to.deep.equal(
        sorted(new Set(visibleSources(world, who, 'collectors'))),
      );
    },
  },
  'GET /api/v1/collectors/{collector_id}': eachOf('collectors', (id) => `/api/v1/collectors/${id}`),
  'GET /api/v1/collectors/{collector_id}/health': eachOf('collectors', (id) => `/api/v1/collectors/${id}/health`),
  'GET /api/v1/collectors/{collector_id}/runs': eachOf('collectors', (id) => `/api/v1/collectors/${id}/runs`),
  'GET /api/v1/collectors/{collector_id}/sources': {
    async check(world, who, allowed) {
      for (const src of ['a', 'a2', 'b'] as Src[]) {
        const reply = await world.app.get(`/api/v1/collectors/${world.collectors[src]}/sources`, who.key);
        if (who.sees === undefined || !allowed) {
          await expectRefused(reply, who, allowed);
          continue;
        }
        if (!who.sources.includes(src)) {
          expect(reply.status, `${who.name} ${src}`).to.equal(404);
          continue;
        }
        expect(reply.status).to.equal(200);
        // the collector's sources, as far as the principal may see them
        const ids = reply.body.map((s: { id: number }) => String(s.id));
        expect(ids, who.name).to.include(world.sources[src]);
        for (const id of ids) expect(visibleSources(world, who, 'sources'), who.name).to.include(id);
      }
    },
  },
  'GET /api/v1/configuration-items': {
    async check(world, who, allowed) {
      // the free text matches every CI's namespace: namespaces of other scopes widen no one's view
      // and the list of a moment (now): the same rows, read through the versions and the way back
      for (const query of ['', '&q=DEFAU', `&as_of=${new Date().toISOString()}`]) {
        const reply = await world.app.get(`/api/v1/configuration-items?status=all&limit=100${query}`, who.key);
        if (await expectRefused(reply, who, allowed)) return;
        expect(sorted(reply.body.items.map((ci: { ci_id: string }) => ci.ci_id)), `${who.name}${query}`).to.deep.equal(
          visibleIds(world, who),
        );
        expect(reply.body.total, who.name).to.equal(who.sees!.length);
      }
    },
  },
  'GET /api/v1/configuration-items/{ci_id}': eachCi(
    (id) => `/api/v1/configuration-items/${id}`,
    () => {},
  ),
  // `to` given: the app's clock stands at its start, before these CIs were collected
  'GET /api/v1/configuration-items/{ci_id}/diff': eachCi(
    (id) => `/api/v1/configuration-items/${id}/diff?from=2000-01-01T00:00:00Z&to=${new Date().toISOString()}`,
    () => {},
  ),
  'GET /api/v1/inventory/diff': {
    async check(world, who, allowed) {
      const reply = await world.app.get(
        `/api/v1/inventory/diff?from=2000-01-01T00:00:00Z&to=${new Date().toISOString()}&limit=100`,
        who.key,
      );
      if (await expectRefused(reply, who, allowed)) return;
      expect(sorted(reply.body.items.map((d: { ci_id: string }) => d.ci_id)), who.name).to.deep.equal(
        visibleIds(world, who),
      );
      expect(reply.body.counts.appeared, who.name).to.equal(who.sees!.length);
    },
  },
  'GET /api/v1/configuration-items/{ci_id}/relationships': eachCi(
    (id) => `/api/v1/configuration-items/${id}/relationships`,
    (reply, ci, who, world) => {
      const related: string[] = reply.body.items.map((r: { related_ci_id: string }) => r.related_ci_id);
      // a principal sees the relationship only with both ends
      const { other, both } = otherSeen(ci, who);
      expect(sorted(new Set(related)), `${who.name} ${ci}`).to.deep.equal(both ? [world.ids[other!]] : []);
      expect(reply.body.total, `${who.name} ${ci}`).to.equal(related.length);
    },
  ),
  'GET /api/v1/configuration-items/{ci_id}/graph': eachCi(
    (id) => `/api/v1/configuration-items/${id}/graph?depth=3`,
    (reply, ci, who, world) => {
      // depending on each other, each is around the other for a principal that sees both, hidden otherwise
      const { other, both } = otherSeen(ci, who);
      expect(sorted(reply.body.nodes.map((n: { ci_id: string }) => n.ci_id)), `${who.name} ${ci}`).to.deep.equal(
        sorted([world.ids[ci], ...(both ? [world.ids[other!]] : [])]),
      );
      expect(reply.body.hidden, `${who.name} ${ci}`).to.equal(other !== undefined && !both ? 2 : 0);
    },
  ),
  'GET /api/v1/configuration-items/{ci_id}/impact': eachCi(
    (id) => `/api/v1/configuration-items/${id}/impact?changes=100`,
    (reply, ci, who, world) => {
      const { other, both } = otherSeen(ci, who);
      expect([reply.body.downstream.total, reply.body.downstream.hidden], `${who.name} ${ci}`).to.deep.equal(
        both ? [1, 0] : [0, other ? 1 : 0],
      );
      const changed = new Set<string>(reply.body.upstream.latest_changes.map((c: { ci_id: string }) => c.ci_id));
      expect(sorted(changed), `${who.name} ${ci}`).to.deep.equal(
        sorted([world.ids[ci], ...(both ? [world.ids[other!]] : [])]),
      );
    },
    // the summary reads the change history too
    'changes:read',
  ),
  'GET /api/v1/ci-changes/{ci_id}': {
    async check(world, who, allowed) {
      // the exact history, folded, and rolled up (exact and folded into lines)
      const ever = 'start_date=2000-01-01T00:00:00Z&end_date=2100-01-01T00:00:00Z';
      for (const reading of [
        '',
        '?fold=true',
        `?rollup=true&${ever}`,
        `?rollup=true&fold=true&include_ignored=true&${ever}`,
      ])
        for (const ci of ['a1', 'a2', 'b1'] as Ci[]) {
          const reply = await world.app.get(`/api/v1/ci-changes/${world.ids[ci]}${reading}`, who.key);
          if (who.sees === undefined || !allowed) {
            await expectRefused(reply, who, allowed);
            continue;
          }
          expect(reply.status, `${who.name} ${ci} ${reading}`).to.equal(who.sees.includes(ci) ? 200 : 404);
          if (reply.status === 200)
            expect(new Set(reply.body.items.map((c: { ci_id: string }) => c.ci_id)), reading).to.deep.equal(
              new Set([world.ids[ci]]),
            );
        }
    },
  },
  'GET /api/v1/changes': {
    async check(world, who, allowed) {
      for (const reading of [
        '',
        '&fold=true',
        '&fold=true&include_ignored=true&filter=severity:in:info,low,medium,high',
      ]) {
        const reply = await world.app.get(`/api/v1/changes?limit=1000${reading}`, who.key);
        if (!(await expectRefused(reply, who, allowed))) {
          expect(
            sorted(new Set(reply.body.items.map((c: { ci_id: string }) => c.ci_id))),
            `${who.name} ${reading}`,
          ).to.deep.equal(visibleIds(world, who));
        }
      }
      const csv = await world.app.request('GET', '/api/v1/changes', { key: who.key, headers: { accept: 'text/csv' } });
      if (who.sees === undefined || !allowed) {
        expect(csv.status).to.equal(who.sees === undefined ? 401 : 403);
        return;
      }
      expect(csv.status).to.equal(200);
      const ciIds = csv.text
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.split(',')[3]!);
      expect(sorted(new Set(ciIds)), `${who.name} CSV`).to.deep.equal(visibleIds(world, who));
    },
  },
  'GET /api/v1/changes/search': {
    async check(world, who, allowed) {
      const reply = await world.app.get('/api/v1/changes/search?query=matrix&limit=100', who.key);
      if (await expectRefused(reply, who, allowed)) return;
      expect(sorted(new Set(reply.body.items.map((c: { ci_id: string }) => c.ci_id))), who.name).to.deep.equal(
        visibleIds(world, who),
      );
    },
  },
  'GET /api/v1/changes/feed': {
    async check(world, who, allowed) {
      const reply = await world.app.get('/api/v1/changes/feed?limit=1000', who.key);
      if (await expectRefused(reply, who, allowed)) return;
      expect(reply.body.caught_up, who.name).to.equal(true);
      expect(sorted(new Set(reply.body.items.map((c: { ci_id: string }) => c.ci_id))), who.name).to.deep.equal(
        visibleIds(world, who),
      );
    },
  },
  'GET /api/v1/changes/stats': {
    async check(world, who, allowed) {
      const reply = await world.app.get(`/api/v1/changes/stats?${world.window}`, who.key);
      if (await expectRefused(reply, who, allowed)) return;
      expect(reply.body.affected_cis, who.name).to.equal(who.sees!.length);
    },
  },
  'POST /api/v1/query': queryRoute('POST'),
  'GET /api/v1/query': queryRoute('GET'),
  'GET /api/v1/query/vocabulary': {
    // the CI types, paths and relationship types named are those of the CIs the principal sees
    async check(world, who, allowed) {
      const reply = await world.app.get('/api/v1/query/vocabulary', who.key);
      if (await expectRefused(reply, who, allowed)) return;
      const seesTenantA = who.sees!.some((ci) => ci !== 'b1');
      expect(reply.body.ci_types, who.name).to.deep.equal(who.sees!.length > 0 ? ['k8s.pod'] : []);
      expect(reply.body.paths.includes('raw_data.changed'), who.name).to.equal(seesTenantA);
      expect(reply.body.relationship_types.includes('depends_on'), who.name).to.equal(
        seesTenantA && holds(who, 'relationships:read'),
      );
    },
  },
};

const routeName = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

describe('one scope matrix for every route that returns inventory data', function () {
  this.timeout(120_000);
  let world: World;
  const principals: PrincipalCase[] = [];

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    const app = await startTestApp();
    const tenantB = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantB}, ${`other-${tenantB.slice(0, 8)}`}, 'Other tenant')`;

    const started = new Date(Date.now() - 60_000);
    const source = await ensureSource(sql, DEFAULT_TENANT_ID, 'matrix-source', 'kubernetes');
    const pod = (name: string, target: string) =>
      buildPod({ name, relationships: [{ type: 'depends_on', target_external_id: target }] });
    const a1 = pod('matrix-a1', 'pod/default/matrix-a2');
    const a2 = pod('matrix-a2', 'pod/default/matrix-a1');
    const sync = (
      scopeId: string,
      records: ReturnType<typeof buildPod>[],
      tenantId = DEFAULT_TENANT_ID,
      sourceId = source.id,
    ) => reconcile(sql, { tenantId, sourceId, scopeId, mode: 'snapshot', records });
    await sync('c1', [a1]);
    await sync('c2', [a2]);
    await sync('c1', [{ ...a1, raw_data: { ...a1.raw_data, changed: 1 } }]);
    await sync('c2', [{ ...a2, raw_data: { ...a2.raw_data, changed: 1 } }]);
    const otherSource = await ensureSource(sql, tenantB, 'matrix-source', 'kubernetes');
    const emptyCollector = await provisionCollector(sql, DEFAULT_TENANT_ID, 'universal', 'matrix-empty');
    const emptySource = await insertSource(sql, DEFAULT_TENANT_ID, {
      collectorId: emptyCollector,
      name: 'matrix-empty',
      endpoint: null,
      config: {},
      scheduleConfig: {},
    });
    await sync('c1', [buildPod({ name: 'matrix-b1' })], tenantB, otherSource.id);
    const idOf = async (tenantId: string, name: string) =>
      (
        await sql<
          { ci_id: string }[]
        >`select ci_id from configuration_items where tenant_id = ${tenantId} and name = ${name}`
      )[0]!.ci_id;
    world = {
      app,
      ids: {
        a1: await idOf(DEFAULT_TENANT_ID, 'matrix-a1'),
        a2: await idOf(DEFAULT_TENANT_ID, 'matrix-a2'),
        b1: await idOf(tenantB, 'matrix-b1'),
      },
      sources: { a: source.id, a2: emptySource!, b: otherSource.id },
      collectors: { a: source.collector_id, a2: emptyCollector, b: otherSource.collector_id },
      window: `start_date=${encodeURIComponent(started.toISOString())}&end_date=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
    };

    const reads: Permission[] = ['configuration_items:read', 'changes:read', 'relationships:read'];
    const c1 = [{ sourceId: source.id, scopeId: 'c1' }];
    const all = [{ sourceId: null, scopeId: null }];
    const admin = await createKey(sql, 'adm', { name: 'adm key' });
    const request = async (method: string, path: string, body?: unknown) => {
      const reply = await app.request(method, path, { key: admin, body });
      expect(reply.status, `${method} ${path}: ${reply.text}`).to.be.oneOf([200, 201]);
      return reply.body;
    };
    const scopeBody = (scopes: typeof c1 | typeof all) => ({
      scopes: scopes.map((s) => ({ source_id: s.sourceId, scope_id: s.scopeId })),
    });
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const userWith = async (
      name: string,
      permissions: Permission[],
      scopes: typeof c1 | typeof all,
      token: Record<string, unknown> = {},
    ) => {
      const user = await request('POST', '/api/v1/users', { name, email: `${name}@example.com` });
      await request('PUT', `/api/v1/users/${user.id}/permissions`, { permissions });
      await request('PUT', `/api/v1/users/${user.id}/scopes`, scopeBody(scopes));
      const minted = await request('POST', `/api/v1/users/${user.id}/tokens`, {
        name: 'matrix',
        expires_at: expires,
        ...token,
      });
      return { id: user.id as string, token: minted.token as string };
    };

    const every = 'all' as const;
    principals.push({ name: 'adm key', key: admin, sees: ['a1', 'a2'], sources: ['a', 'a2'], permissions: every });
    principals.push({
      name: 'ro key',
      key: await createKey(sql, 'ro', { name: 'ro key' }),
      sees: ['a1', 'a2'],
      sources: ['a', 'a2'],
      permissions: new Set<Permission>([...reads, 'sources:read', 'collectors:read', 'audit:read']),
    });
    principals.push({
      name: 'ro key, scope c1',
      key: await createKey(sql, 'ro', { name: 'ro key, scope c1', scopes: c1 }),
      sees: ['a1'],
      sources: ['a'],
      permissions: new Set<Permission>([...reads, 'sources:read', 'collectors:read', 'audit:read']),
    });
    principals.push({
      name: 'svc key, all scopes',
      key: await createKey(sql, 'svc', { permissions: reads, scopes: all }),
      sees: ['a1', 'a2'],
      sources: ['a', 'a2'],
      permissions: new Set(reads),
    });
    principals.push({
      name: 'svc key, scope c1',
      key: await createKey(sql, 'svc', { permissions: reads, scopes: c1 }),
      sees: ['a1'],
      sources: ['a'],
      permissions: new Set(reads),
    });
    principals.push({
      name: 'svc key, no scopes',
      key: await createKey(sql, 'svc', { permissions: reads, scopes: [] }),
      sees: [],
      sources: [],
      permissions: new Set(reads),
    });
    principals.push({
      name: 'svc key, CI reads only',
      key: await createKey(sql, 'svc', {
        permissions: ['configuration_items:read'],
        scopes: all,
        name: 'svc key, CI reads only',
      }),
      sees: ['a1', 'a2'],
      sources: ['a', 'a2'],
      permissions: new Set<Permission>(['configuration_items:read']),
    });
    const direct = await userWith('direct', reads, c1);
    principals.push({
      name: 'usr token, direct grants',
      key: direct.token,
      sees: ['a1'],
      sources: ['a'],
      permissions: new Set(reads),
      actorId: direct.id,
    });

    const teamUser = await userWith('teamed', [], []);
    const team = await request('POST', '/api/v1/teams', { name: 'matrix-team' });
    await request('PUT', `/api/v1/teams/${team.id}/permissions`, { permissions: reads });
    await request('PUT', `/api/v1/teams/${team.id}/scopes`, scopeBody(c1));
    await request('PUT', `/api/v1/teams/${team.id}/members/${teamUser.id}`, {});
    principals.push({
      name: 'usr token, team grants',
      key: teamUser.token,
      sees: ['a1'],
      sources: ['a'],
      permissions: new Set(reads),
      actorId: teamUser.id,
    });

    const narrowPermissions: Permission[] = ['configuration_items:read', 'changes:read'];
    const narrowed = await userWith('narrowed', reads, all, {
      permissions: narrowPermissions,
      scopes: scopeBody(c1).scopes,
    });
    principals.push({
      name: 'usr token, narrowed',
      key: narrowed.token,
      sees: ['a1'],
      sources: ['a'],
      permissions: new Set(narrowPermissions),
      actorId: narrowed.id,
    });

    const gone = await userWith('deactivated', reads, all);
    await request('POST', `/api/v1/users/${gone.id}/deactivate`, {});
    principals.push({
      name: 'usr token, deactivated user',
      key: gone.token,
      sees: undefined,
      sources: [],
      permissions: new Set(reads),
    });

    const boss = await userWith('superadmin', [], []);
    await setSuperadmin(sql, DEFAULT_TENANT_ID, boss.id, true);
    principals.push({
      name: 'usr token, superadmin',
      key: boss.token,
      sees: ['a1', 'a2'],
      sources: ['a', 'a2'],
      permissions: every,
    });

    const other = await issueApiKey(sql, TEST_SECRET, { tenantId: tenantB, name: 'other tenant admin', tier: 'adm' });
    principals.push({
      name: 'adm key of another tenant',
      key: other.key,
      sees: ['b1'],
      sources: ['b'],
      permissions: every,
    });
  });

  after(async () => {
    await world?.app.close();
  });

  it('covers every API route: in the matrix, or exempt with the reason it returns no inventory data', () => {
    const names = apiRoutes.map(routeName);
    const unclassified = names.filter((name) => !(name in MATRIX) && !(name in EXEMPT));
    expect(unclassified, 'add these routes to the scope matrix (or to EXEMPT, with a reason)').to.deep.equal([]);
    const stale = [...Object.keys(MATRIX), ...Object.keys(EXEMPT)].filter((name) => !names.includes(name));
    expect(stale, 'routes named here that the router no longer has').to.deep.equal([]);
  });

  for (const [name, route] of Object.entries(MATRIX)) {
    it(`${name}: each principal gets exactly its scope, 404 beyond it, 403 without the permission, 401 when deactivated`, async () => {
      const definition = apiRoutes.find((r) => routeName(r) === name)!;
      const access = definition.access as { resource: string; action: string };
      for (const who of principals) {
        const allowed =
          who.permissions === 'all' || who.permissions.has(`${access.resource}:${access.action}` as Permission);
        await route.check(world, who, allowed);
      }
    });
  }

  it('audits every refusal for a missing permission, with who was refused', async () => {
    await world.app.context.audit.flush();
    const denied = await world.app.sql<{ actor_name: string; route: string }[]>`
      select actor_name, details->>'route' as route from audit_events where event_type = 'permission.denied'`;
    const byActor = new Set(denied.map((d) => `${d.actor_name} ${d.route}`));
    expect(byActor).to.include('svc key, CI reads only GET /api/v1/changes');
    expect(byActor).to.include('svc key, CI reads only GET /api/v1/configuration-items/{ci_id}/relationships');
    expect(byActor).to.include('narrowed GET /api/v1/configuration-items/{ci_id}/relationships');
    expect(denied.some((d) => d.actor_name === 'ro key' || d.actor_name === 'adm key')).to.equal(false);
  });
});
