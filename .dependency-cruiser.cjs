/**
 * The import rules of ARCHITECTURE.md, checked by `npm run lint` (dependency-cruiser). Layers from
 * the ground up; a module may import its own layer's modules (without a circle) and those below,
 * never one above. Type-only imports count: a type ties modules together as much as a value does.
 */
const GROUND = '^src/platform/([^/]+[.]ts$|(config|db|observability|net|query-language)/)';
const CORE = '^src/platform/(auth|audit|query|http)/';
const DOMAIN = '^src/(history/records|inventory/write-path|collection/types)/';
const SEARCH = '^src/history/search/';
const CONTEXT = '^src/context[.]ts$';
/** Every folder inside an area but the shared models above is a feature; the web interface is one too. */
const AREAS = '(identity|collection|inventory|history|operations)';
const FEATURES = `^src/(?!(history/records|inventory/write-path|collection/types|history/search)/)${AREAS}/[^/]+/|^src/ui/`;
const TOP = '^src/(app|server|cli|workers)[.]ts$|^src/cli/|^src/build[.]mjs$';
const LAYERS = [GROUND, CORE, DOMAIN, SEARCH, CONTEXT, FEATURES, TOP].join('|');

/** `from` may not import `to`. */
const never = (name, comment, from, to) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: { path: to },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules that import each other in a loop.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-layer',
      comment: 'Every module under src/ belongs to a layer: a new folder is placed in an area, or named here.',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS },
      to: {},
    },
    {
      name: 'no-layer-alone',
      comment: 'A module under src/ that imports nothing still belongs to a layer.',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS, orphan: true },
      to: {},
    },
    {
      name: 'no-layer-imported',
      comment: 'Nothing imports a module under src/ that belongs to no layer.',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: LAYERS },
    },
    {
      name: 'top-through-services',
      comment:
        "The application, the server and the command line reach a feature's data through its service, as other features do.",
      severity: 'error',
      from: { path: TOP },
      to: { path: `^src/${AREAS}/[^/]+/.*store[.]ts$`, pathNot: `${DOMAIN}|${SEARCH}` },
    },
    {
      name: 'feature-store',
      comment: "A feature's store is its own: another feature asks through that feature's service.",
      severity: 'error',
      from: { path: `^src/${AREAS}/([^/]+)/` },
      to: { path: `^src/${AREAS}/[^/]+/.*store[.]ts$`, pathNot: `^src/$1/$2/|${DOMAIN}|${SEARCH}` },
    },
    never(
      'ground-floor',
      'The ground floor (errors, CSV, validation, config, db, observability, net) imports nothing above it.',
      GROUND,
      `${CORE}|${DOMAIN}|${SEARCH}|${CONTEXT}|${FEATURES}|${TOP}`,
    ),
    never(
      'core',
      'Identity, audit, query builders and HTTP plumbing import no domain module, feature or the application context.',
      CORE,
      `${DOMAIN}|${SEARCH}|${CONTEXT}|${FEATURES}|${TOP}`,
    ),
    never(
      'core-order',
      'The identity model is the lowest of the core: it imports no audit, query or HTTP module.',
      '^src/platform/auth/',
      '^src/platform/(audit|query|http)/',
    ),
    never(
      'audit-below-http',
      'The audit log does not know the HTTP plumbing or the query builders.',
      '^src/platform/audit/',
      '^src/platform/(http|query)/',
    ),
    never(
      'domain',
      'The change model, the write path and the collector types import no search backend, context or feature.',
      DOMAIN,
      `${SEARCH}|${CONTEXT}|${FEATURES}|${TOP}`,
    ),
    never(
      'domain-order',
      'The change model is written by the write path, never the other way; collector types sit on the write path.',
      '^src/history/records/',
      '^src/(inventory/write-path|collection/types)/',
    ),
    never(
      'write-path-below-types',
      'The write path does not know the collector types that feed it.',
      '^src/inventory/write-path/',
      '^src/collection/types/',
    ),
    never(
      'search',
      'Search backends import no context or feature: routes reach them through the context.',
      SEARCH,
      `${CONTEXT}|${FEATURES}|${TOP}`,
    ),
    never('context', 'The application context only names the services it holds.', CONTEXT, `${FEATURES}|${TOP}`),
    never('features', 'Features never import the application that mounts them.', FEATURES, TOP),
    {
      name: 'foreign-routes',
      comment: "A feature's routes are mounted by the application alone: no other module imports them.",
      severity: 'error',
      from: { pathNot: '^src/app[.]ts$' },
      to: { path: '^src/[^/]+/[^/]+/[a-z-]*routes[.]ts$' },
    },
    never(
      'routes-through-service',
      'Routes declare and present: they reach data through their service, never a store.',
      '(^|/)[^/]*routes[.]ts$',
      '(^|/)[^/]*store[.]ts$',
    ),
    never(
      'store-below-service',
      'A store holds SQL only: it imports no service, routes or presenter.',
      '(/|-)store[.]ts$',
      '/(service|routes|presenter)[.]ts$',
    ),
    never(
      'service-below-routes',
      'A service does not know the routes that call it or how they present it.',
      '(/|-)service[.]ts$',
      '/(routes|presenter)[.]ts$',
    ),
    never(
      'collection-order',
      'Collector types know no sources or collectors; sources know no collectors.',
      '^src/collection/(types|sources)/',
      '^src/collection/collectors/',
    ),
    never(
      'types-below-sources',
      'Collector types know nothing of sources.',
      '^src/collection/types/',
      '^src/collection/sources/',
    ),
    never(
      'identity-order',
      'Grants are used by users, teams, tokens and API keys, never the reverse.',
      '^src/identity/grants/',
      '^src/identity/(users|teams|tokens|api-keys|sign-in)/',
    ),
    never(
      'users-below-teams',
      'Users are used by teams, tokens and sign-in, never the reverse.',
      '^src/identity/users/',
      '^src/identity/(teams|tokens|sign-in)/',
    ),
    never(
      'web-interface',
      'The browser code is built on its own: it imports nothing of the server but the query language, whose one grammar the editor shares.',
      '^src/ui/app/',
      '^src/(?!ui/app/|platform/query-language/)',
    ),
    never(
      'query-language',
      'The query language is pure (it runs in the browser too): it imports nothing but itself.',
      '^src/platform/query-language/',
      '^src/(?!platform/query-language/)|^node:',
    ),
    never(
      'indexer',
      'The indexer runs on the change model and the search index alone.',
      '^indexer/',
      `${FEATURES}|${TOP}|${CONTEXT}`,
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.tsx', '.js', '.mjs'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
