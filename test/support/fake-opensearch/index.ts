/**
 * A fake OpenSearch HTTP server for tests.
 *
 * No OpenSearch can run on the machines these tests run on, so the project's OpenSearch code is
 * tested against this double. It speaks the real REST wire protocol (paths, JSON envelopes, NDJSON
 * bulk bodies, status codes, error bodies) for the subset of the API the project uses, so that the
 * real `@opensearch-project/opensearch` client works against it unchanged. Anything outside that
 * subset is answered with a 400 `parsing_exception`, so that unsupported use fails loudly instead of
 * silently returning a wrong answer.
 */
import { FakeOpenSearchServer } from './server.js';
import type { FakeOpenSearch } from './types.js';

export type { FakeOpenSearch, ItemFailure, RecordedRequest, RequestFailure, StoredDocument } from './types.js';

/** Starts a fake OpenSearch server on 127.0.0.1 on a random port. */
export async function startFakeOpenSearch(): Promise<FakeOpenSearch> {
  const fake = new FakeOpenSearchServer();
  await fake.listen();
  return fake;
}
