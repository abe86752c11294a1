/** What tests see of the fake: its recorded requests, its state, and its failure injection. */

export interface RecordedRequest {
  method: string;
  /** Decoded path, without the query string. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON, the parsed NDJSON lines of a _bulk body, the raw text if it did not parse, or undefined. */
  body: unknown;
}

export interface StoredDocument {
  source: Record<string, unknown>;
  routing?: string;
  version: number;
}

export type RequestFailure = { kind: 'reset' } | { kind: 'status'; status: number; type?: string };
export interface ItemFailure {
  status: number;
  type: string;
  reason?: string;
}

export interface FakeOpenSearch {
  url: string;
  requests: RecordedRequest[];
  indices(): string[];
  documents(index: string): Map<string, StoredDocument>;
  aliases(): Record<string, string[]>;
  /** Failure injection: the next `times` requests whose path matches `path` (RegExp, default any) fail as given. */
  failNext(failure: RequestFailure, options?: { times?: number; path?: RegExp }): void;
  /** Items of later _bulk requests whose _id is in `ids` fail with this status/type, `times` times each (default: always). */
  failItems(ids: Iterable<string>, failure: ItemFailure, options?: { times?: number }): void;
  clearFailures(): void;
  reset(): void;
  close(): Promise<void>;
}
