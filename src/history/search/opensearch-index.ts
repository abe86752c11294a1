import { Client } from '@opensearch-project/opensearch';
import { readFileSync } from 'node:fs';
import type { Sql } from 'postgres';
import type { FieldChange } from '../records/diff.js';
import { packagePath } from '../../platform/paths.js';
import { documentTokens, type DocumentTokens } from '../records/document.js';

/** The index template of the change records (mappings/change-records.json). */
interface IndexTemplate {
  index_patterns: string[];
  _meta: { mapping_version: number };
  template: { mappings: { properties: Record<string, unknown> } };
  [key: string]: unknown;
}

let template: IndexTemplate | undefined;

function loadTemplate(): IndexTemplate {
  template ??= JSON.parse(readFileSync(packagePath('mappings', 'change-records.json'), 'utf8')) as IndexTemplate;
  return template;
}

/**
 * A client for OPENSEARCH_URL. Retries are the caller's business (the indexer backs off itself,
 * and a search should fail fast), so the client does not retry on its own.
 */
export function createOpenSearchClient(url: string, requestTimeoutMs = 30_000): Client {
  return new Client({ node: url, maxRetries: 0, requestTimeout: requestTimeoutMs });
}

/** A new concrete index name behind `alias`: the mapping version and a UTC timestamp. */
export function newIndexName(alias: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').toLowerCase();
  return `${alias}-v${loadTemplate()._meta.mapping_version}-${stamp}`;
}

/** Installs (or updates) the index template, matching every index behind `alias`. */
export async function installTemplate(client: Client, alias: string): Promise<void> {
  const body = { ...loadTemplate(), index_patterns: [`${alias}-*`] };
  await client.indices.putIndexTemplate({ name: alias, body: body as never });
}

/** The concrete indices the alias points to (none when it does not exist yet). */
export async function aliasIndices(client: Client, alias: string): Promise<string[]> {
  try {
    const { body } = await client.indices.getAlias({ name: alias });
    return Object.keys(body as Record<string, unknown>);
  } catch (error) {
    if ((error as { meta?: { statusCode?: number } }).meta?.statusCode === 404) return [];
    throw error;
  }
}

/**
 * Gives existing indices the fields added to the template since they were made: their mapping is
 * strict, so it refuses documents that carry such a field, and adding a field changes nothing
 * stored. The indices behind the alias, and the index of a reindex begun before the template changed.
 */
export async function addTemplateFields(client: Client, indices: readonly string[]): Promise<void> {
  if (indices.length === 0) return;
  const { properties } = loadTemplate().template.mappings;
  await client.indices.putMapping({ index: indices.join(','), body: { properties } as never });
}

/**
 * Makes sure the template is installed and the alias points at an index, creating the first one
 * when there is none. The first index has a fixed name, so that indexers starting together do not
 * create one each: all but one find it exists, and use it. Returns the index the alias points at.
 */
export async function ensureIndex(client: Client, alias: string): Promise<string> {
  await installTemplate(client, alias);
  const existing = await aliasIndices(client, alias);
  if (existing.length > 0) {
    await addTemplateFields(client, existing);
    return existing[0]!;
  }
  const index = `${alias}-v${loadTemplate()._meta.mapping_version}-initial`;
  try {
    await client.indices.create({ index, body: { aliases: { [alias]: {} } } });
  } catch (error) {
    const type = (error as { meta?: { body?: { error?: { type?: string } } } }).meta?.body?.error?.type;
    if (type !== 'resource_already_exists_exception') throw error;
  }
  return index;
}

/** A change record as it is indexed: its fields, its search tokens, and `changes` as stored data. */
export interface ChangeDocument {
  /** The change id as decimal text: exact beyond 2^53, and a `long` to OpenSearch all the same. */
  id: string;
  tenant_id: string;
  source_id: string | null;
  scope_id: string | null;
  /** Only on the record of a move between instances (sql/0039): the instance the CI left. */
  moved_from_scope_id?: string;
  ci_id: string;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  change_type: string;
  kind: string | null;
  severity: string | null;
  ignored: boolean;
  changed_at: string;
  changed_fields: string[];
  has_changes: boolean;
  changes: FieldChange[];
  tokens: DocumentTokens;
}

type StoredRecord = Omit<ChangeDocument, 'has_changes' | 'tokens' | 'moved_from_scope_id'> & {
  moved_from_scope_id: string | null;
};

/** The documents of the given change records, read from PostgreSQL (missing ids are left out). */
export async function loadChangeDocuments(sql: Sql, ids: readonly string[]): Promise<ChangeDocument[]> {
  if (ids.length === 0) return [];
  const records = await sql<StoredRecord[]>`
    select cr.id::text, cr.tenant_id, cr.source_id::text, cr.scope_id, cr.ci_id, cr.ci_name, cr.ci_namespace, cr.ci_type,
           cr.change_type, cr.kind, cr.severity, cr.ignored, to_char(cr.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as changed_at,
           cr.changed_fields, cr.changes, cr.moved_from_scope_id
    from unnest(${ids as string[]}::bigint[]) as wanted(id)
    join change_records cr on cr.id = wanted.id`;
  return records.map(({ moved_from_scope_id: movedFrom, ...record }) => ({
    ...record,
    // absent rather than null on every other record: the field is searched for existence
    ...(movedFrom === null ? {} : { moved_from_scope_id: movedFrom }),
    has_changes: record.changes.length > 0,
    tokens: documentTokens(record),
  }));
}

/** Bulk-request lines that index the documents into `index`, by change id, routed by tenant. */
export function bulkBody(index: string, documents: readonly ChangeDocument[]): unknown[] {
  return documents.flatMap((document) => [
    { index: { _index: index, _id: document.id, routing: document.tenant_id } },
    document,
  ]);
}
