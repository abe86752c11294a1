/** The HTTP side of the fake: bodies parsed and recorded, failures injected, replies sent in OpenSearch's envelope. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cluster, type StoredDoc } from './cluster.js';
import { badRequest, errorReply, OpenSearchError, type Reply } from './errors.js';
import { dispatch, safeDecode } from './routes.js';
import type { FakeOpenSearch, ItemFailure, RecordedRequest, RequestFailure, StoredDocument } from './types.js';

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest('parsing_exception', `failed to parse the request body: ${(error as Error).message}`);
  }
}

/** _bulk bodies are NDJSON (and must end with a newline, as OpenSearch insists); every other body is JSON. */
function parseBody(raw: string, ndjson: boolean): unknown {
  if (raw.trim() === '') return undefined;
  if (!ndjson) return parseJson(raw);
  if (!raw.endsWith('\n'))
    throw badRequest('illegal_argument_exception', 'The bulk request must be terminated by a newline [\\n]');
  return raw
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(parseJson);
}

/** The body as recorded: parsed when possible, else the raw text together with the error to answer. */
function interpretBody(raw: string, ndjson: boolean): { body: unknown; error?: OpenSearchError } {
  try {
    return { body: parseBody(raw, ndjson) };
  } catch (error) {
    return { body: raw, error: error as OpenSearchError };
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, method: string, reply: Reply): void {
  const payload = reply.body === undefined || method === 'HEAD' ? '' : JSON.stringify(reply.body);
  response.writeHead(reply.status, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

/** The reply of an operation; an error that is not OpenSearch's is a bug in the fake, answered 500 rather than hanging the client. */
function replyOf(operation: () => Reply): Reply {
  try {
    return operation();
  } catch (error) {
    if (error instanceof OpenSearchError) return errorReply(error);
    const reason = error instanceof Error ? (error.stack ?? error.message) : String(error);
    return errorReply(new OpenSearchError(500, 'fake_internal_error', reason));
  }
}

function injectedFailureReply({ status, type }: { status: number; type?: string }): Reply {
  const reason = `failure injected by the fake OpenSearch server (status ${status})`;
  const defaultType = status === 429 ? 'es_rejected_execution_exception' : 'fake_injected_failure';
  return errorReply(new OpenSearchError(status, type ?? defaultType, reason));
}

export class FakeOpenSearchServer implements FakeOpenSearch {
  url = '';
  readonly requests: RecordedRequest[] = [];
  private cluster = new Cluster();
  private requestFailures: { failure: RequestFailure; remaining: number; path: RegExp }[] = [];
  private readonly server = createServer((request, response) => {
    this.handle(request, response).catch(() => response.destroy());
  });

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const method = request.method ?? 'GET';
    const url = new URL(request.url ?? '/', 'http://fake');
    const path = safeDecode(url.pathname);
    const query = Object.fromEntries(url.searchParams);
    const parsed = interpretBody(raw, /\/_bulk\/?$/.test(url.pathname));
    this.requests.push({ method, path, query, body: parsed.body });
    const failure = this.takeRequestFailure(path);
    if (failure?.kind === 'reset') {
      request.socket.destroy();
      return;
    }
    const answer = () => {
      if (parsed.error) throw parsed.error;
      return dispatch(this.cluster, method, url.pathname, { query, body: parsed.body });
    };
    send(response, method, failure ? injectedFailureReply(failure) : replyOf(answer));
  }

  private takeRequestFailure(path: string): RequestFailure | undefined {
    const rule = this.requestFailures.find((candidate) => candidate.path.test(path));
    if (!rule) return undefined;
    if (--rule.remaining <= 0) this.requestFailures.splice(this.requestFailures.indexOf(rule), 1);
    return rule.failure;
  }

  indices(): string[] {
    return [...this.cluster.indices.keys()];
  }

  documents(index: string): Map<string, StoredDocument> {
    const docs = this.cluster.indices.get(index)?.docs ?? new Map<string, StoredDoc>();
    // Copies, so that a test cannot change the fake's state behind its back.
    return new Map([...docs].map(([id, { seqNo: _seqNo, ...document }]) => [id, structuredClone(document)]));
  }

  aliases(): Record<string, string[]> {
    const aliases: Record<string, string[]> = {};
    for (const index of this.cluster.indices.values()) {
      for (const alias of index.aliases) (aliases[alias] ??= []).push(index.name);
    }
    return aliases;
  }

  failNext(failure: RequestFailure, options: { times?: number; path?: RegExp } = {}): void {
    // A global or sticky RegExp would carry lastIndex between tests of different paths.
    const path = options.path ? new RegExp(options.path.source, options.path.flags.replace(/[gy]/g, '')) : /.*/;
    this.requestFailures.push({ failure, remaining: options.times ?? 1, path });
  }

  failItems(ids: Iterable<string>, failure: ItemFailure, options: { times?: number } = {}): void {
    for (const id of ids) this.cluster.itemFailures.set(id, { failure, remaining: options.times ?? Infinity });
  }

  clearFailures(): void {
    this.requestFailures = [];
    this.cluster.itemFailures.clear();
  }

  reset(): void {
    this.cluster = new Cluster();
    this.requestFailures = [];
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve, reject) =>
      this.server.close((error) => (error ? reject(error) : resolve())),
    );
    // The client keeps connections alive; without this, close() would wait for them to time out.
    this.server.closeAllConnections();
    await closed;
  }
}
