/** The document store's write path: _bulk requests of index, create and delete actions. */
import { randomBytes } from 'node:crypto';
import { aliasTargets, type Cluster, type IndexState, type StoredDoc } from './cluster.js';
import { badRequest, indexNotFound, ok, OpenSearchError, unsupported, validationFailed, type Reply } from './errors.js';
import type { Json } from './json.js';
import { routingRequired, validateDocument } from './mappings.js';
import { objectParams, singleEntry } from './params.js';

interface BulkOperation {
  action: 'index' | 'create' | 'delete';
  index: string;
  id?: string;
  routing?: string;
  source?: unknown;
}

function parseBulk(lines: unknown, pathIndex: string | undefined): BulkOperation[] {
  if (!Array.isArray(lines) || lines.length === 0) throw validationFailed('no requests added');
  const operations: BulkOperation[] = [];
  for (let line = 0; line < lines.length; line++) {
    const [action, meta] = singleEntry(lines[line], `bulk action/metadata line ${line + 1}`);
    if (action === 'update') throw unsupported('bulk action [update]');
    if (action !== 'index' && action !== 'create' && action !== 'delete') {
      const reason = `Malformed action/metadata line [${line + 1}], expected one of [create, delete, index, update] but found [${action}]`;
      throw badRequest('illegal_argument_exception', reason);
    }
    const params = objectParams(meta, `bulk ${action}`, ['_index', '_id', 'routing']);
    const index = params._index ?? pathIndex;
    if (index === undefined) throw validationFailed('index is missing');
    if (action === 'delete' && params._id === undefined) throw validationFailed('id is missing');
    // Every action but delete is followed by its document line.
    const sourceLine = action === 'delete' ? undefined : ++line;
    if (sourceLine !== undefined && sourceLine >= lines.length) {
      const reason = `The bulk [${action}] action on the last line has no document line`;
      throw badRequest('illegal_argument_exception', reason);
    }
    operations.push({
      action,
      index: String(index),
      ...(params._id !== undefined && { id: String(params._id) }),
      ...(params.routing !== undefined && { routing: String(params.routing) }),
      ...(sourceLine !== undefined && { source: lines[sourceLine] }),
    });
  }
  return operations;
}

export function bulk(cluster: Cluster, body: unknown, pathIndex?: string): Reply {
  const started = Date.now();
  const operations = parseBulk(body, pathIndex);
  const results = operations.map((operation) => bulkItem(cluster, operation));
  return ok({
    took: Date.now() - started,
    errors: results.some((result) => result.error !== undefined),
    items: operations.map((operation, position) => ({ [operation.action]: results[position] })),
  });
}

/** One bulk item: failures are reported in the item, never as a failure of the whole request. */
function bulkItem(cluster: Cluster, operation: BulkOperation): Json {
  const id = operation.id ?? randomBytes(15).toString('base64url');
  let index: IndexState | undefined;
  try {
    index = writeIndex(cluster, operation);
    consumeItemFailure(cluster, id);
    if (routingRequired(index.mappings) && operation.routing === undefined) {
      const details = { index: index.name };
      throw badRequest('routing_missing_exception', `routing is required for [${index.name}]/[${id}]`, details);
    }
    return operation.action === 'delete' ? deleteDocument(index, id) : writeDocument(index, id, operation);
  } catch (error) {
    if (!(error instanceof OpenSearchError)) throw error;
    const indexDetails = index ? { index: index.name, shard: '0', index_uuid: index.uuid } : {};
    const described = { ...error.describe(), ...indexDetails };
    return { _index: index?.name ?? operation.index, _id: id, status: error.status, error: described };
  }
}

/** Writes go to an index, or to an alias with exactly one index; a missing index is auto-created from the templates. */
function writeIndex(cluster: Cluster, operation: BulkOperation): IndexState {
  const index = cluster.indices.get(operation.index);
  if (index) return index;
  const [target, ...others] = aliasTargets(cluster.indices, operation.index);
  if (target && others.length > 0) {
    const reason =
      `no write index is defined for alias [${operation.index}]. The write index may be explicitly disabled using is_write_index=false ` +
      'or the alias points to multiple indices without one being designated as a write index';
    throw badRequest('illegal_argument_exception', reason);
  }
  if (target) return target;
  // Like OpenSearch, a delete does not create the index it targets.
  if (operation.action === 'delete') throw indexNotFound(operation.index);
  return cluster.addIndex(operation.index, {});
}

function consumeItemFailure(cluster: Cluster, id: string): void {
  const rule = cluster.itemFailures.get(id);
  if (!rule) return;
  if (--rule.remaining <= 0) cluster.itemFailures.delete(id);
  const { status, type, reason } = rule.failure;
  throw new OpenSearchError(
    status,
    type,
    reason ?? `failure injected for document [${id}] by the fake OpenSearch server`,
  );
}

function writeDocument(index: IndexState, id: string, operation: BulkOperation): Json {
  validateDocument(operation.source, index.mappings);
  const previous = index.docs.get(id);
  if (previous && operation.action === 'create') {
    const reason = `[${id}]: version conflict, document already exists (current version [${previous.version}])`;
    throw new OpenSearchError(409, 'version_conflict_engine_exception', reason);
  }
  const doc: StoredDoc = {
    source: structuredClone(operation.source as Json),
    ...(operation.routing !== undefined && { routing: operation.routing }),
    version: (previous?.version ?? 0) + 1,
    seqNo: index.nextSeqNo++,
  };
  index.docs.set(id, doc);
  return writeResult(index, id, doc, previous ? ['updated', 200] : ['created', 201]);
}

function deleteDocument(index: IndexState, id: string): Json {
  const previous = index.docs.get(id);
  index.docs.delete(id);
  const tombstone = { version: (previous?.version ?? 0) + 1, seqNo: index.nextSeqNo++ };
  return writeResult(index, id, tombstone, previous ? ['deleted', 200] : ['not_found', 404]);
}

type Written = Pick<StoredDoc, 'version' | 'seqNo'>;

function writeResult(index: IndexState, id: string, written: Written, [result, status]: [string, number]): Json {
  const shardsWritten = { total: 1, successful: 1, failed: 0 };
  const sequence = { _seq_no: written.seqNo, _primary_term: 1 };
  return {
    _index: index.name,
    _id: id,
    _version: written.version,
    result,
    _shards: shardsWritten,
    ...sequence,
    status,
  };
}
