import type { Json } from './json.js';

/** An error answered in OpenSearch's `{"error": {...}, "status": N}` envelope. */
export class OpenSearchError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly reason: string,
    readonly details: Json = {},
    /** For a search phase failure: the shard-level error it wraps, reported as root cause. */
    readonly inner?: OpenSearchError,
  ) {
    super(reason);
  }

  /** The `error` object alone, as in bulk item failures and `caused_by`. */
  describe(): Json {
    return { type: this.type, reason: this.reason, ...this.details };
  }

  toBody(): Json {
    const rootCause = this.inner ? this.inner.describe() : this.describe();
    const causedBy = this.inner ? { caused_by: rootCause } : {};
    return { error: { root_cause: [rootCause], ...this.describe(), ...causedBy }, status: this.status };
  }
}

export const badRequest = (type: string, reason: string, details?: Json) =>
  new OpenSearchError(400, type, reason, details);

/** Refuses anything outside the subset the fake implements, so tests never pass on a silently wrong answer. */
export const unsupported = (what: string) =>
  badRequest('parsing_exception', `${what} is not supported by the fake OpenSearch server`);

export const validationFailed = (problem: string) =>
  badRequest('action_request_validation_exception', `Validation Failed: 1: ${problem};`);

export const mapperParsing = (reason: string) => badRequest('mapper_parsing_exception', reason);

export const indexNotFound = (name: string) =>
  new OpenSearchError(404, 'index_not_found_exception', `no such index [${name}]`, {
    index: name,
    'resource.id': name,
    'resource.type': 'index_or_alias',
    index_uuid: '_na_',
  });

/** Errors raised on a shard while searching reach the client wrapped in a search phase failure. */
export function searchPhaseFailure(cause: OpenSearchError, index: string): OpenSearchError {
  const failedShards = [{ shard: 0, index, node: 'fake-node', reason: cause.describe() }];
  const details = { phase: 'query', grouped: true, failed_shards: failedShards };
  return new OpenSearchError(cause.status, 'search_phase_execution_exception', 'all shards failed', details, cause);
}

/** What a REST operation answers: a status and a JSON body (none for HEAD). */
export interface Reply {
  status: number;
  body?: unknown;
}

export const ok = (body?: unknown): Reply => ({ status: 200, body });
export const acknowledged = (): Reply => ok({ acknowledged: true });
export const errorReply = (error: OpenSearchError): Reply => ({ status: error.status, body: error.toBody() });
export const shards = (count: number) => ({ total: count, successful: count, skipped: 0, failed: 0 });
