import type { components, operations } from './api-types.generated.js';

/*
 * The server's shapes the web interface reads, each named once from the types generated from the
 * API's OpenAPI document (./api-types.generated.ts, `npm run openapi:types`): a response that changes shape
 * fails the interface's type check instead of a page in a browser. Operations are named by their
 * operationId, the path beside each.
 */

type JsonOf<Response> = Response extends { content: { 'application/json': infer Body } } ? Body : never;
type Responses<Op extends keyof operations> = operations[Op]['responses'];
/** The JSON body operation `Op` answers with when it succeeds. */
export type Answer<Op extends keyof operations> = JsonOf<Responses<Op>[Extract<keyof Responses<Op>, 200 | 201 | 202>]>;
type ItemOf<Page extends { items: readonly unknown[] }> = Page['items'][number];

export type ErrorEnvelope = components['schemas']['ErrorEnvelope'];

/** GET /api/v1/me, GET /auth/me, POST /auth/session: who the session acts as. */
export type Me = Answer<'getMe'>;
/** GET /auth/methods */
export type SignInMethods = Answer<'getSignInMethods'>;

/** GET /api/v1/configuration-items: a page of CIs (the other answer, of type-data items, the interface never asks for). */
export type InventoryPage = Extract<Answer<'listConfigurationItems'>, { items: { ci_id: string }[] }>;
export type InventoryItem = ItemOf<InventoryPage>;
/** GET /api/v1/configuration-items/{ci_id}: now, or as of a moment. */
export type ConfigurationItem = Answer<'getConfigurationItem'>;
/** GET /api/v1/configuration-items/{ci_id}/relationships */
export type RelationshipPage = Answer<'listRelationships'>;
export type Relationship = ItemOf<RelationshipPage>;
/** GET /api/v1/configuration-items/{ci_id}/graph */
export type DependencyGraph = Answer<'dependencyGraph'>;
export type GraphNode = DependencyGraph['nodes'][number];
/** GET /api/v1/configuration-items/{ci_id}/diff */
export type CiDiff = Answer<'diffConfigurationItem'>;
/** GET /api/v1/inventory/diff */
export type InventoryDiffPage = Answer<'diffInventory'>;
export type InventoryDifference = ItemOf<InventoryDiffPage>;
/** GET /api/v1/baselines (POST answers one) */
export type Baseline = ItemOf<Answer<'listBaselines'>>;

/** GET /api/v1/changes */
export type ChangeList = Answer<'listChanges'>;
/** GET /api/v1/changes/search */
export type ChangeSearch = Answer<'searchChanges'>;
/** GET /api/v1/ci-changes/{ci_id} */
export type CiChangePage = Answer<'listCiChanges'>;
export type ChangeRecord = ItemOf<ChangeList>;
/** A change record found by a search: where the query matched. */
export type FoundChange = ItemOf<ChangeSearch>;
/** GET /api/v1/changes/stats */
export type ChangeStatistics = Answer<'changeStatistics'>;

/** POST /api/v1/query: a page of CIs, the groups of an aggregate, or the plan. */
export type QueryAnswer = Answer<'runQuery'>;
export type QueryRows = Extract<QueryAnswer, { kind: 'rows' }>;
export type QueryRow = QueryRows['items'][number];
export type QueryAggregate = Extract<QueryAnswer, { kind: 'aggregate' }>;
export type QueryPlan = Extract<QueryAnswer, { kind: 'explain' }>['plan'];
/** GET /api/v1/query/vocabulary */
export type QueryVocabulary = Answer<'queryVocabulary'>;

/** GET /api/v1/saved-views */
export type SavedView = ItemOf<Answer<'listSavedViews'>>;
export type SavedViewName = SavedView['view'];

/** GET /api/v1/sources/{source_id} */
export type SourceDetail = Answer<'getSource'>;
/** GET /api/v1/collectors/{collector_id}/sources */
export type CollectorSource = Answer<'listCollectorSources'>[number];
/** GET /api/v1/collectors */
export type Collector = ItemOf<Answer<'listCollectors'>>;
/** GET /api/v1/collectors/health/all */
export type CollectorsHealth = Answer<'getAllCollectorsHealth'>;
/** GET /api/v1/collectors/{collector_id}/runs */
export type CollectionRun = ItemOf<Answer<'listCollectionRuns'>>;

/** GET /api/v1/api-keys */
export type ApiKey = Answer<'listApiKeys'>[number];
/** POST /api/v1/api-keys: the key, with its secret this once. */
export type CreatedApiKey = Answer<'createApiKey'>;
/** A data scope as keys, tokens and grants hold it: a source and one of its instances, null meaning every one. */
export type DataScope = Exclude<ApiKey['scopes'], 'all'>[number];
/** GET /api/v1/tokens, GET /api/v1/users/{user_id}/tokens */
export type Token = Answer<'listTokens'>[number];
/** POST /api/v1/tokens, POST /api/v1/users/{user_id}/tokens: the token, with its secret this once. */
export type CreatedToken = Answer<'createToken'>;
/** GET /api/v1/users */
export type UserSummary = ItemOf<Answer<'listUsers'>>;
/** GET /api/v1/users/{user_id} */
export type UserDetail = Answer<'getUser'>;
/** GET /api/v1/audit-events */
export type AuditPage = Answer<'listAuditEvents'>;
export type AuditEvent = ItemOf<AuditPage>;

/** GET /api/v1/subscriptions/{id} (and the items of the list) */
export type Subscription = Answer<'getSubscription'>;
/** POST /api/v1/subscriptions: the subscription, with its signing secret this once. */
export type CreatedSubscription = Answer<'createSubscription'>;
/** GET /api/v1/subscriptions/{id}/deliveries */
export type SubscriptionDelivery = ItemOf<Answer<'listSubscriptionDeliveries'>>;
/** POST /api/v1/subscriptions/{id}/test */
export type SubscriptionTestResult = Answer<'testSubscription'>;

/** GET /api/v1/identities */
export type IdentityPage = Answer<'listIdentities'>;
export type ListedIdentity = ItemOf<IdentityPage>;
/** GET /api/v1/identities/{identity_id}: the reconciled record with each field's provenance. */
export type IdentityDetail = Answer<'getIdentity'>;
export type ReconciledField = IdentityDetail['fields'][string];
export type CompetingValue = ReconciledField['competing'][number];
export type IdentityObservation = IdentityDetail['observations'][number];
export type IdentityChange = IdentityDetail['changes'][number];
/** GET /api/v1/identities/{identity_id}/graph */
export type IdentityGraph = Answer<'getIdentityGraph'>;
/** GET /api/v1/identities/conflicts: the review queue. */
export type ConflictPage = Answer<'listIdentityConflicts'>;
export type IdentityConflict = ItemOf<ConflictPage>;
export type ConflictMember = IdentityConflict['groups'][number][number];
/** GET /api/v1/identities/decisions (POST answers one, DELETE the one undone) */
export type DecisionPage = Answer<'listIdentityDecisions'>;
export type IdentityDecision = ItemOf<DecisionPage>;
/** POST /api/v1/identities/decisions */
export type NewIdentityDecision = operations['decideIdentity']['requestBody']['content']['application/json'];

/** GET /api/v1/quality */
export type QualityOverview = Answer<'getQuality'>;
export type QualityGroup = QualityOverview['by_type'][number];
/** GET /api/v1/quality/{measure}/items */
export type QualityFailures = Answer<'listQualityFailures'>;
/** GET /api/v1/quality/configuration-items/{ci_id} */
export type CiQuality = Answer<'getCiQuality'>;
/** GET /api/v1/quality/rules (POST and PUT answer one) */
export type QualityRule = ItemOf<Answer<'listQualityRules'>>;
/** POST /api/v1/quality/rules/preview */
export type QualityRulePreview = Answer<'previewQualityRule'>;
