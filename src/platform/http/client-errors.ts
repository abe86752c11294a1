import { randomUUID } from 'node:crypto';
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';

const REASONS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large'],
  HPE_URI_TOO_LONG: [414, 'URI too long'],
};

/** Paths are echoed at most this long: an over-long URL is the very thing some of these errors are about. */
const MAX_ECHOED_PATH = 2048;

/**
 * The method and path of a request the parser refused, read from its request line when it got that
 * far (`error.rawPacket`), so the envelope names them like any other error's. The query is left
 * out, as Koa's `ctx.path` leaves it out: it may hold what does not belong in a response or a log.
 */
export function requestLineOf(raw: Buffer | undefined): { method: string; path: string } {
  const line = /^([A-Za-z-]{1,32}) (\S+)(?: |\r?\n|$)/.exec(
    raw?.subarray(0, MAX_ECHOED_PATH + 64).toString('latin1') ?? '',
  );
  if (!line) return { method: '', path: '' };
  const target = line[2]!;
  let path = target.split(/[?#]/, 1)[0]!;
  // an absolute-form target (`GET http://host/path`) names its path after the authority
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(path);
  if (absolute) path = path.slice(absolute[0].length) || '/';
  return { method: line[1]!.toUpperCase(), path: path.slice(0, MAX_ECHOED_PATH) };
}

/**
 * Requests Node's HTTP parser refuses (an over-long URL or header block, garbage instead of HTTP)
 * never reach Koa; they are answered here, in the same envelope as every other error. CONNECT
 * requests are handed to Node separately too; they are passed to the application like any other
 * request, which answers them as a method no route serves.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const [status, message] = REASONS[error.code ?? ''] ?? [400, 'Bad request'];
    answerOnSocket(socket, status, message, requestLineOf(error.rawPacket));
  });
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    // a proxy's target (`CONNECT host:443`) is no path of this server
    if (!request.url?.startsWith('/')) {
      answerOnSocket(socket, 405, 'Method not allowed', {
        method: 'CONNECT',
        path: (request.url ?? '').slice(0, MAX_ECHOED_PATH),
      });
      return;
    }
    // without a listener Node drops the connection unanswered; this answers it on the same socket
    // and closes it afterwards (no tunnel is ever opened)
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket as never);
    response.on('finish', () => {
      response.detachSocket(socket as never);
      socket.end();
    });
    server.emit('request', request, response);
  });
}

function answerOnSocket(
  socket: Duplex,
  status: number,
  message: string,
  request: { method: string; path: string },
): void {
  const body = JSON.stringify({
    error: {
      id: randomUUID(),
      code: `HTTP_${status}`,
      message,
      details: {},
      path: request.path,
      method: request.method,
    },
  });
  socket.end(
    `HTTP/1.1 ${status} ${message}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
