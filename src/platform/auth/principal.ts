export const RESOURCES = [
  'configuration_items',
  'changes',
  'relationships',
  'sources',
  'collectors',
  'credentials',
  'users',
  'api_keys',
  'audit',
  'subscriptions',
  // queries:read runs query-language queries that read a whole table (allow_scan)
  'queries',
] as const;
export const ACTIONS = ['read', 'write', 'delete'] as const;

export type Resource = (typeof RESOURCES)[number];
export type Action = (typeof ACTIONS)[number];
export type Permission = `${Resource}:${Action}`;
export type Tier = 'adm' | 'svc' | 'ro' | 'usr';

/** A data scope: a null sourceId is every source; a null scopeId every instance of the source. */
export interface DataScope {
  sourceId: string | null;
  scopeId: string | null;
}

/**
 * Who is asking. Every route and every read is decided from this alone: the tenant bounds all
 * queries, permissions gate actions, scopes narrow which CIs (and their history) are visible.
 * API keys produce it today; user sessions and user tokens produce the same shape.
 */
export interface Principal {
  tenantId: string;
  kind: 'api_key' | 'user';
  id: string;
  name: string;
  tier: Tier | undefined;
  superadmin: boolean;
  permissions: ReadonlySet<Permission>;
  /** 'all' means unrestricted; an empty list sees no data at all. */
  scopes: 'all' | readonly DataScope[];
  /** The person behind a user token or session. */
  user?: { id: string; name: string; email: string | null };
  /** The API key or user token the request presented (absent for sessions). */
  keyId?: string;
}

export function isPermission(value: string): value is Permission {
  const [resource, action, extra] = value.split(':');
  return (
    extra === undefined &&
    (RESOURCES as readonly string[]).includes(resource ?? '') &&
    (ACTIONS as readonly string[]).includes(action ?? '')
  );
}

export const everyPermission = (): Set<Permission> =>
  new Set(RESOURCES.flatMap((resource) => ACTIONS.map((action) => `${resource}:${action}` as Permission)));

/** Fixed permission sets of the key tiers that do not carry their own. */
export function tierPermissions(tier: Tier, assigned: readonly Permission[]): Set<Permission> {
  switch (tier) {
    case 'adm':
      return everyPermission();
    case 'ro':
      // read-only sees everything but secrets and the people behind the keys
      return new Set(
        RESOURCES.filter((r) => r !== 'credentials' && r !== 'users' && r !== 'api_keys' && r !== 'queries').map(
          (r) => `${r}:read` as Permission,
        ),
      );
    case 'svc':
    case 'usr':
      return new Set(assigned);
  }
}

export function can(principal: Principal, resource: Resource, action: Action): boolean {
  return principal.superadmin || principal.permissions.has(`${resource}:${action}`);
}

/** Collapses scope rows: any unrestricted row makes the whole set unrestricted. */
export function normalizeScopes(scopes: readonly DataScope[]): 'all' | DataScope[] {
  if (scopes.some((s) => s.sourceId === null)) return 'all';
  const wholeSources = new Set(scopes.filter((s) => s.scopeId === null).map((s) => s.sourceId));
  return scopes.filter((s) => s.scopeId === null || !wholeSources.has(s.sourceId));
}

/** The data scopes that narrow what the principal sees in its tenant: 'all' for none (a superadmin's are ignored). */
export const dataScopesOf = (principal: Principal): 'all' | readonly DataScope[] =>
  principal.superadmin ? 'all' : principal.scopes;

/** Whether no data scope narrows what the principal sees in its tenant. */
export const seesAllData = (principal: Principal): boolean => dataScopesOf(principal) === 'all';

/** Whether the principal's data scopes cover an instance of a source (used for writes into it). */
export function coversScope(principal: Principal, sourceId: string, scopeId: string | null): boolean {
  const scopes = dataScopesOf(principal);
  return (
    scopes === 'all' || scopes.some((s) => s.sourceId === sourceId && (s.scopeId === null || s.scopeId === scopeId))
  );
}

/**
 * The write rule's one question: which instances of a source the principal may write into. 'all'
 * when its scopes hold the whole source (or all data); otherwise the instance ids its scopes name,
 * possibly none. Every write that touches CIs, their relationships or a source's shared state is
 * judged from this, as every read is judged from visibleTo.
 */
export function writableInstances(principal: Principal, sourceId: string): 'all' | string[] {
  const scopes = dataScopesOf(principal);
  if (scopes === 'all') return 'all';
  const held = scopes.filter((s) => s.sourceId === sourceId);
  if (held.some((s) => s.scopeId === null)) return 'all';
  return held.map((s) => s.scopeId!);
}

/** Whether the principal holds every instance of the source: what state shared by all of them (credentials, runs, health) needs. */
export const coversWholeSource = (principal: Principal, sourceId: string): boolean =>
  writableInstances(principal, sourceId) === 'all';

/** Whether any of the principal's data scopes touches the source. */
export function coversSource(principal: Principal, sourceId: string): boolean {
  const scopes = dataScopesOf(principal);
  return scopes === 'all' || scopes.some((s) => s.sourceId === sourceId);
}

/**
 * The scopes both sets cover: what a narrowed token names, within what its user holds now. An
 * instance is covered when one side covers it and the other covers it too (whole source or all).
 */
export function intersectScopes(a: 'all' | readonly DataScope[], b: 'all' | readonly DataScope[]): 'all' | DataScope[] {
  if (a === 'all') return b === 'all' ? 'all' : [...b];
  if (b === 'all') return [...a];
  const both = new Map<string, DataScope>();
  for (const x of a) {
    for (const y of b) {
      if (x.sourceId !== y.sourceId) continue;
      const narrower = x.scopeId === null ? y : y.scopeId === null || y.scopeId === x.scopeId ? x : undefined;
      if (narrower) both.set(`${narrower.sourceId}\u0000${narrower.scopeId}`, narrower);
    }
  }
  // both sides are lists of named sources, so the result names sources too
  return normalizeScopes([...both.values()]) as DataScope[];
}

/**
 * The tenant itself, for work the service does over all of its data (checks kept per CI, the
 * sweep's scores): reads see the whole tenant; it holds no permission to act.
 */
export const tenantReader = (tenantId: string): Principal => ({
  tenantId,
  kind: 'api_key',
  id: 'tenant',
  name: 'tenant',
  tier: undefined,
  superadmin: false,
  permissions: new Set(),
  scopes: 'all',
});
