import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

const REASONS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large'],
  HPE_URI_TOO_LONG: [414, 'URI too long'],
};

/**
 * Requests Node's HTTP parser refuses (an over-long URL or header block, garbage instead of HTTP)
 * never reach Koa; they are answered here, in the same envelope as every other error.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (error.code === 'ECONNRESET')) {
      socket.destroy();
      return;
    }
    const [status, message] = REASONS[error.code ?? ''] ?? [400, 'Bad request'];
    const body = JSON.stringify({ error: { id: randomUUID(), code: `HTTP_${status}`, message, details: {}, path: '', method: '' } });
    socket.end(
      `HTTP/1.1 ${status} ${message}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
