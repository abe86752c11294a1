import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { AppError } from '../errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../validation.js';

/** The request body, decompressed as its Content-Encoding says (415 for an encoding it cannot read). */
export function decodedBody(body: Readable, encoding: string | undefined): Readable {
  switch ((encoding ?? 'identity').trim().toLowerCase()) {
    case 'identity':
    case '':
      return body;
    case 'gzip':
    case 'x-gzip':
      return body.pipe(createGunzip());
    case 'deflate':
      return body.pipe(createInflate());
    case 'br':
      return body.pipe(createBrotliDecompress());
    default:
      throw new AppError(415, 'HTTP_415', 'Unsupported Content-Encoding; send gzip, deflate, br or identity');
  }
}

/** zlib reports a corrupt gzip, deflate or brotli stream with these codes and no HTTP status. */
export function isBrokenCompression(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(Z_|ERR__ERROR|ERR_BROTLI)/.test(code);
}

export const malformedCompression = () => new AppError(400, 'HTTP_400', 'Malformed compressed body');

const endedEarly = () =>
  new AppError(400, 'HTTP_400', 'The request body ended early (the client closed the connection)');
const tooLarge = (limit: number) => new AppError(413, 'HTTP_413', 'Request body too large', { limit });

/**
 * The whole body, decompressed, refused with a 413 once it passes `limit` bytes (counted after
 * decompression, so a small compressed body cannot expand without bound). A declared length over
 * the limit is refused before anything is read. The request is paused rather than destroyed on
 * refusal, so the error still reaches the client.
 */
export function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const encoding = request.headers['content-encoding'];
  const declared = Number(request.headers['content-length']);
  if (!encoding && Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  const stream = decodedBody(request, encoding);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (error?: unknown) => {
      stream.off('data', onData).off('end', onEnd).off('error', onError);
      request.off('aborted', onAborted).off('error', onError);
      if (stream !== request) {
        request.unpipe();
        stream.destroy();
      }
      request.pause();
      if (error) reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) stop(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, size));
    };
    const onAborted = () => stop(endedEarly());
    const onError = (error: unknown) => {
      if (isBrokenCompression(error)) stop(malformedCompression());
      else if ((error as { code?: unknown }).code === 'ECONNRESET') onAborted();
      else stop(error);
    };
    stream.on('data', onData).on('end', onEnd).on('error', onError);
    // a compressed body's request is not the stream read: its failures are heard here
    request.on('aborted', onAborted);
    if (stream !== request) request.on('error', onError);
  });
}

/** `"__proto__":` as a key, however its letters are escaped (the check JSON parsers for Node use). */
const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
/** A strict JSON body is an object or an array, after optional RFC 8259 whitespace. */
const OBJECT_OR_ARRAY = /^[ \t\n\r]*[[{]/;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * A JSON request body as a value: `{}` when empty, 400 for bytes that are not UTF-8 (they would
 * otherwise be stored as replacement characters, silently changing the data), for anything but an
 * object or array, for malformed JSON, for nesting deeper than MAX_JSON_DEPTH and for a
 * `__proto__` key (a prototype pollution waiting for the first object spread).
 */
export function parseJsonBody(bytes: Buffer): unknown {
  const content = bytes.subarray(0, 3).equals(UTF8_BOM) ? bytes.subarray(3) : bytes;
  if (content.length === 0) return {};
  if (!isUtf8(content))
    throw new AppError(400, 'HTTP_400', 'JSON body is not valid UTF-8; send the text encoded as UTF-8');
  const text = content.toString('utf8');
  let value: unknown;
  try {
    if (!OBJECT_OR_ARRAY.test(text)) throw new SyntaxError('not an object or an array');
    value = JSON.parse(text);
  } catch {
    throw new AppError(400, 'HTTP_400', 'Malformed JSON body');
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
    throw new AppError(400, 'HTTP_400', `JSON body nested deeper than ${MAX_JSON_DEPTH} levels`, {
      max_depth: MAX_JSON_DEPTH,
    });
  }
  if (PROTO_KEY.test(text) && hasProtoKey(value)) {
    throw new AppError(400, 'HTTP_400', 'JSON body contains a "__proto__" key, which is not accepted');
  }
  return value;
}

/** Walks a document already known to be at most MAX_JSON_DEPTH deep. */
function hasProtoKey(node: unknown): boolean {
  if (typeof node !== 'object' || node === null) return false;
  if (Array.isArray(node)) return node.some(hasProtoKey);
  if (Object.prototype.hasOwnProperty.call(node, '__proto__')) return true;
  return Object.values(node).some(hasProtoKey);
}
