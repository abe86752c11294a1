/**
 * The import rules of ARCHITECTURE.md, checked by `npm run lint` (dependency-cruiser). Layers from
 * the ground up; a module may import its own layer's modules (without a circle) and those below,
 * never one above. Type-only imports count: a type ties modules together as much as a value does.
 */
const GROUND = '^src/(errors|csv|validation|paths|tenants|progress)[.]ts$|^src/(config|db|observability|net)/';
const CORE = '^src/(auth|audit|query|http)/';
const DOMAIN = '^src/(history|inventory|collector-types)/';
const SEARCH = '^src/search/';
const CONTEXT = '^src/context[.]ts$';
const FEATURES =
  '^src/(api-keys|audit-events|baselines|changes|diffs|collectors|configuration-items|demo|grants|impact|saved-views|lifecycle|relationships|sign-in|sources|subscriptions|system|teams|tokens|users|ui)/';
const TOP = '^src/(app|server|cli)[.]ts$|^src/cli/';

/** `from` may not import `to`. */
const never = (name, comment, from, to) => ({ name, comment, severity: 'error', from: { path: from }, to: { path: to } });

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'Modules that import each other in a loop.', severity: 'error', from: {}, to: { circular: true } },
    never('ground-floor', 'The ground floor (errors, CSV, validation, config, db, observability, net) imports nothing above it.', GROUND, `${CORE}|${DOMAIN}|${SEARCH}|${CONTEXT}|${FEATURES}|${TOP}`),
    never('core', 'Identity, audit, query builders and HTTP plumbing import no domain module, feature or the application context.', CORE, `${DOMAIN}|${SEARCH}|${CONTEXT}|${FEATURES}|${TOP}`),
    never('core-order', 'The identity model is the lowest of the core: it imports no audit, query or HTTP module.', '^src/auth/', '^src/(audit|query|http)/'),
    never('audit-below-http', 'The audit log does not know the HTTP plumbing or the query builders.', '^src/audit/', '^src/(http|query)/'),
    never('domain', 'The change model, the write path and the collector types import no search backend, context or feature.', DOMAIN, `${SEARCH}|${CONTEXT}|${FEATURES}|${TOP}`),
    never('domain-order', 'The change model is written by the write path, never the other way; collector types sit on the write path.', '^src/history/', '^src/(inventory|collector-types)/'),
    never('write-path-below-types', 'The write path does not know the collector types that feed it.', '^src/inventory/', '^src/collector-types/'),
    never('search', 'Search backends import no context or feature: routes reach them through the context.', SEARCH, `${CONTEXT}|${FEATURES}|${TOP}`),
    never('context', 'The application context only names the services it holds.', CONTEXT, `${FEATURES}|${TOP}`),
    never('features', 'Features never import the application that mounts them.', FEATURES, TOP),
    {
      name: 'foreign-routes',
      comment: "A feature's routes are mounted by the application alone: no other module imports them.",
      severity: 'error',
      from: { pathNot: '^src/app[.]ts$' },
      to: { path: '^src/[^/]+/routes[.]ts$' },
    },
    never('routes-through-service', 'Routes declare and present: they reach data through their service, never a store.', '(^|/)[^/]*routes[.]ts$', '(^|/)[^/]*store[.]ts$'),
    never('store-below-service', 'A store holds SQL only: it imports no service, routes or presenter.', '/store[.]ts$', '/(service|routes|presenter)[.]ts$'),
    never('service-below-routes', 'A service does not know the routes that call it or how they present it.', '/service[.]ts$', '/(routes|presenter)[.]ts$'),
    never('collection-order', 'Collector types know no sources or collectors; sources know no collectors.', '^src/(collector-types|sources)/', '^src/collectors/'),
    never('types-below-sources', 'Collector types know nothing of sources.', '^src/collector-types/', '^src/sources/'),
    never('identity-order', 'Grants are used by users, teams, tokens and API keys, never the reverse.', '^src/grants/', '^src/(users|teams|tokens|api-keys|sign-in)/'),
    never('users-below-teams', 'Users are used by teams, tokens and sign-in, never the reverse.', '^src/users/', '^src/(teams|tokens|sign-in)/'),
    never('web-interface', 'The browser code is built on its own: it imports nothing of the server.', '^src/ui/app/', '^src/(?!ui/app/)'),
    never('indexer', 'The indexer runs on the change model and the search index alone.', '^indexer/', `${FEATURES}|${TOP}|${CONTEXT}`),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
