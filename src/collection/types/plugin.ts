import { Type, type TObject } from '@sinclair/typebox';
import type { UniversalRecord } from '../../inventory/write-path/records.js';
import type { AllowedHosts } from '../../platform/net/endpoint.js';

/**
 * The contract between the collection worker and a collector type. It lives below the source and
 * collector features, so that both use it (sources to check settings against a type, the worker to
 * run one) without importing each other.
 */

/**
 * A source's credentials, decrypted, as a collector type is handed them. Stored encrypted by
 * src/collection/sources/credentials.ts.
 */
export type CredentialDocument =
  | { type: 'token'; token: string }
  | { type: 'basic'; username: string; password: string }
  | { type: 'tls'; client_certificate: string; client_key: string; ca_certificate?: string };

/**
 * Thrown by a watch whose start point the server no longer has (Kubernetes' 410 Gone): the worker
 * lists everything again and watches from the new list.
 */
export class WatchExpired extends Error {
  constructor(message = 'the watch start point expired; listing again') {
    super(message);
    this.name = 'WatchExpired';
  }
}

/** What a collector type can do, as the collector health route reports it. */
export interface Capabilities {
  /** Takes universal-format pushes (`POST /api/v1/sources/{id}/ingest`). */
  supports_universal_format: boolean;
  /** One collector of the type serves several sources. */
  supports_multi_source: boolean;
  /** Can keep the inventory current between full lists (`collection_mode: hybrid`). */
  supports_watch: boolean;
  /** Collects by itself on a schedule or a trigger; push-only types do neither. */
  collects: boolean;
}

/** What a collection is handed: the source's settings, its decrypted credentials, a cancellation signal. */
export interface CollectContext {
  source: { id: string; name: string; endpoint: string | null; config: Record<string, unknown> };
  credentials: CredentialDocument | undefined;
  /** Aborted when the run times out (`config.timeout`), its source is deleted or the worker stops. */
  signal: AbortSignal;
  /** CINV_SOURCE_ALLOWED_HOSTS: every connection the type makes is checked against it (guardedGet, guardedAddress). */
  allowedHosts: AllowedHosts;
  /**
   * Reports how one part of the collection went (a kind of object, a database). A failed part
   * makes the run `partial` rather than failed: the other parts' records are written as usual.
   */
  component(name: string, error?: unknown): void;
}

/** Part of a collection: records of one instance (scope), reconciled as they arrive. */
export interface CollectedBatch {
  scopeId: string | null;
  records: UniversalRecord[];
  /**
   * Where a watch of what this batch listed can start (a Kubernetes list's `resourceVersion`,
   * keyed by kind). The last one per key is handed to `watch` as `from`.
   */
  resume?: { key: string; version: string };
}

/** What a watch is handed: the collection's context and where each of its streams starts. */
export interface WatchContext extends CollectContext {
  /** The newest `resume` version per key, from the list and from the events since. */
  from: Readonly<Record<string, string>>;
}

/**
 * Changes a watch saw, in one instance (scope): objects added or modified (`upserts`, full
 * records) and external ids deleted. `resume` moves the key's start on, so a reconnect continues
 * after these events rather than replaying or missing any.
 */
export interface WatchBatch {
  scopeId: string | null;
  upserts: UniversalRecord[];
  deletions: string[];
  resume?: { key: string; version: string };
}

/**
 * A collector type: its configuration schema (validation and the OpenAPI document), what it can do
 * and what it can collect. Types that collect by themselves add a `collect` implementation when
 * they are registered with the worker.
 */
export interface CollectorType {
  type: string;
  description: string;
  /** The type's own `config` keys, beside the common ones every type accepts. */
  configSchema: TObject;
  capabilities: Capabilities;
  /** What `config.enabled_collectors` may name; empty when the type collects one thing. */
  collectables: readonly string[];
  /** The `ci_type`s it writes, each with the keys of its `type_data` (what `include_type_data` returns). */
  ciTypes?: Readonly<Record<string, readonly string[]>>;
  /** URL schemes `endpoint` may use (default http and https); `null` when the type has no endpoint. */
  endpointSchemes: readonly string[] | null;
  /**
   * Lists what the source has now, in batches (bounded memory whatever its size). Types that
   * collect by themselves have it; the reconciler decides what changed.
   */
  collect?(context: CollectContext): AsyncIterable<CollectedBatch>;
  /**
   * Follows changes after a list (`collection_mode: hybrid`, types with `supports_watch`). It may
   * end or throw when a connection drops: the worker reconnects from the newest `resume` points,
   * and lists again on `WatchExpired`. Yielding small batches is fine; the worker coalesces them.
   */
  watch?(context: WatchContext): AsyncIterable<WatchBatch>;
}

/** `config` keys every type accepts (and ignores when it cannot use them). */
export const CommonConfig = {
  verify_ssl: Type.Optional(Type.Boolean({ description: "Verify the endpoint's TLS certificate (default true)." })),
  timeout: Type.Optional(
    Type.Number({
      exclusiveMinimum: 0,
      maximum: 86_400,
      description: 'Seconds a collection may take before it is cancelled.',
    }),
  ),
  collection_mode: Type.Optional(
    Type.Union([Type.Literal('periodic'), Type.Literal('hybrid')], {
      description:
        '`periodic`: a full list every interval; `hybrid`: a watch keeps the inventory current between lists (types that can watch).',
    }),
  ),
  enabled_collectors: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      maxItems: 100,
      uniqueItems: true,
      description: 'What to collect, among what the type can.',
    }),
  ),
};

/**
 * What a collector type of a row written before it was known (or after it was removed) can do:
 * take pushes, nothing else.
 */
export const UNKNOWN_TYPE_CAPABILITIES: Capabilities = {
  supports_universal_format: true,
  supports_multi_source: true,
  supports_watch: false,
  collects: false,
};
