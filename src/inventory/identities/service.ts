import type { AppContext } from '../../context.js';
import type { Principal } from '../../platform/auth/principal.js';
import { notFound } from '../../platform/errors.js';
import { decodeCursor, encodeCursor } from '../../platform/http/cursor.js';
import { parseFilters, type FilterSpec } from '../../platform/query/filters.js';
import { checkedAsOf, ciAt } from '../configuration-items/service.js';
import { facetsOf } from './facets.js';
import {
  changesOfAll,
  identityById,
  identityPage,
  linkedAt,
  observationsNow,
  openConflictsOf,
  pinsOf,
  relationshipsOfAll,
  type IdentityRow,
  type ObservationRow,
} from './read-store.js';
import { reconcileFields, type Offer } from './reconciled.js';
import { tenantRules } from './resolve-store.js';
import { KIND_FIELDS, rulesInForce } from './rules.js';
import type { IdentityListQuery } from './schema.js';
import type { Static } from '@sinclair/typebox';

export { IdentityWorker, catchUpIdentities } from './worker.js';

const FILTERS: FilterSpec = {
  fields: {
    kind: { kind: 'text', column: 'i.kind' },
    name: { kind: 'text', column: 'i.name' },
    created_at: { kind: 'timestamp', column: 'i.created_at' },
    updated_at: { kind: 'timestamp', column: 'i.updated_at' },
  },
};

const iso = (d: Date | string) => new Date(d).toISOString();

/** A page of identities the principal may see, walked by cursor. */
export async function listIdentities(app: AppContext, principal: Principal, query: Static<typeof IdentityListQuery>) {
  const filters = parseFilters(query.filter, FILTERS);
  const binding = {
    tenantId: principal.tenantId,
    reader: principal,
    scope: 'identities',
    sort: `${query.sort_by}:${query.sort_order}`,
    filters: { filter: query.filter ?? [] },
  };
  const after = query.cursor ? (decodeCursor(app.config.secret, query.cursor, binding).key as [string, string]) : null;
  const rows = await identityPage(app.sql, principal, {
    filters,
    sort: query.sort_by,
    order: query.sort_order,
    limit: query.limit,
    after,
  });
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const sortValue = (row: IdentityRow) => (query.sort_by === 'name' ? row.name : iso(row[query.sort_by]));
  return {
    items: page.map(presentListed),
    has_more: rows.length > query.limit,
    next_cursor:
      rows.length > query.limit && last ? encodeCursor(app.config.secret, binding, [sortValue(last), last.id]) : null,
  };
}

const presentListed = (row: IdentityRow) => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  observation_count: row.observation_count,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
});

/** The identity, if the principal sees one of its observations (now, or at `at`). */
async function visibleIdentity(app: AppContext, principal: Principal, id: string, observations: unknown[]) {
  const row = await identityById(app.sql, principal, id);
  if (!row || observations.length === 0) throw notFound('Identity not found', { identity_id: id });
  return row;
}

function offersOf(rows: readonly ObservationRow[], marginMinutes: number): Offer[] {
  return rows.map((o) => {
    const seen = o.last_seen ? new Date(o.last_seen) : new Date(o.linked_at);
    return {
      ciId: o.ci_id,
      sourceId: o.source_id,
      ciType: o.ci_type,
      fields: o.fields,
      lastSeen: seen.toISOString(),
      staleAt: new Date(seen.getTime() + (o.interval_minutes + marginMinutes) * 60_000).toISOString(),
    };
  });
}

/**
 * The identity now: its reconciled record with provenance, its observations, their relationships
 * and their latest changes; everything from the observations the principal may see, and nothing
 * from the others (not even that they exist).
 */
export async function identityDetail(app: AppContext, principal: Principal, id: string, asOf?: string) {
  if (asOf !== undefined) return identityAsOf(app, principal, id, await checkedAsOf(app, asOf));
  const observations = await observationsNow(app.sql, principal, id);
  const row = await visibleIdentity(app, principal, id, observations);
  const rules = rulesInForce(await tenantRules(app.sql, principal.tenantId))[row.kind]!;
  const ids = observations.map((o) => o.ci_id);
  const [pins, relationships, changes, conflicts] = await Promise.all([
    pinsOf(app.sql, principal.tenantId, ids),
    relationshipsOfAll(app.sql, principal, ids, 500),
    changesOfAll(app.sql, principal, ids, 100),
    openConflictsOf(app.sql, principal, ids),
  ]);
  const visiblePins = pins
    .filter((p) => observations.some((o) => o.source_id === p.source_id))
    .map((p) => ({ field: p.field, sourceId: p.source_id }));
  return {
    ...presentIdentity(row),
    fields: reconcileFields(
      offersOf(observations, rules.staleMarginMinutes),
      rules,
      visiblePins,
      app.now(),
      KIND_FIELDS[row.kind],
    ),
    observations: observations.map(presentObservation),
    relationships: relationships
      .filter((r) => !(ids.includes(r.from_ci_id) && ids.includes(r.to_ci_id) && r.other_id === r.from_ci_id))
      .map((r) => ({
        from_ci_id: r.from_ci_id,
        to_ci_id: r.to_ci_id,
        relationship_type: r.relationship_type,
        other: { ci_id: r.other_id, name: r.other_name, ci_type: r.other_type },
      })),
    changes: changes.map((c) => ({ ...c, changed_at: iso(c.changed_at) })),
    conflicts,
  };
}

const presentIdentity = (row: IdentityRow) => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  retired_at: row.retired_at ? iso(row.retired_at) : null,
});

const presentObservation = (o: ObservationRow) => ({
  ci_id: o.ci_id,
  name: o.name,
  ci_type: o.ci_type,
  status: o.status,
  source_id: o.source_id,
  scope_id: o.scope_id,
  role: o.role,
  keys: o.keys,
  linked_at: iso(o.linked_at),
  last_seen: o.last_seen ? iso(o.last_seen) : null,
});

/**
 * The identity at a moment: the observations its links held then, each CI as it was stored then
 * (the time machine), its fields reconciled from those states as if every source had been fresh.
 */
async function identityAsOf(app: AppContext, principal: Principal, id: string, at: string) {
  const linked = await linkedAt(app.sql, id, at);
  const states = (await Promise.all(linked.map((ci) => ciAt(app, principal, ci, at)))).filter((s) => s !== undefined);
  const row = await visibleIdentity(app, principal, id, states);
  const rules = rulesInForce(await tenantRules(app.sql, principal.tenantId))[row.kind]!;
  const observed = states.map((state) => ({ state, facet: facetsOf({ ...state, status: 'active' })[0] }));
  const offers: Offer[] = observed.flatMap(({ state, facet }) =>
    facet
      ? [
          {
            ciId: state.ci_id,
            sourceId: state.source_id,
            ciType: state.ci_type,
            fields: Object.fromEntries(
              Object.entries(facet.fields).map(([k, value]) => [k, { value, since: iso(state.updated_at) }]),
            ),
            lastSeen: iso(state.updated_at),
            // the past is read as every source then reported it
            staleAt: '9999-12-31T00:00:00.000Z',
          },
        ]
      : [],
  );
  const observations = observed.map(({ state, facet }) => ({
    ci_id: state.ci_id,
    name: state.name,
    ci_type: state.ci_type,
    status: state.status,
    source_id: state.source_id,
    scope_id: state.scope_id,
    role: facet?.role ?? 'self',
    keys: facet?.keys ?? {},
    linked_at: at,
    last_seen: null,
  }));
  return {
    ...presentIdentity(row),
    as_of: at,
    fields: reconcileFields(offers, rules, [], new Date(at), KIND_FIELDS[row.kind]),
    observations,
    relationships: [],
    changes: [],
    conflicts: [],
  };
}

/** The identity's graph: the identity, its visible observations, and what they relate to. */
export async function identityGraph(app: AppContext, principal: Principal, id: string) {
  const observations = await observationsNow(app.sql, principal, id);
  const row = await visibleIdentity(app, principal, id, observations);
  const ids = observations.map((o) => o.ci_id);
  const relationships = await relationshipsOfAll(app.sql, principal, ids, 500);
  const nodes = new Map<
    string,
    { id: string; type: 'identity' | 'ci'; name: string; ci_type: string | null; observation: boolean }
  >();
  nodes.set(row.id, { id: row.id, type: 'identity', name: row.name, ci_type: null, observation: false });
  for (const o of observations)
    nodes.set(o.ci_id, { id: o.ci_id, type: 'ci', name: o.name, ci_type: o.ci_type, observation: true });
  for (const r of relationships)
    if (!nodes.has(r.other_id))
      nodes.set(r.other_id, {
        id: r.other_id,
        type: 'ci',
        name: r.other_name,
        ci_type: r.other_type,
        observation: false,
      });
  const edges = [
    ...observations.map((o) => ({ from: o.ci_id, to: row.id, type: o.role === 'self' ? 'observes' : 'runs-on' })),
    ...relationships.map((r) => ({ from: r.from_ci_id, to: r.to_ci_id, type: r.relationship_type })),
  ];
  const unique = [...new Map(edges.map((e) => [`${e.from}|${e.to}|${e.type}`, e])).values()];
  return { nodes: [...nodes.values()], edges: unique };
}
