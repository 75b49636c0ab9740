import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type express from 'express';
import { problemOfStatus } from './errors.ts';

/**
 * Serves the app like `app.listen`, and answers the requests Node's HTTP parser refuses (bad
 * framing, invalid bytes in the request line or a header, headers too large) with problem+json
 * instead of Node's empty answer.
 */
export async function listenHttp(app: express.Express, port: number, host: string): Promise<Server> {
  const server = createServer(app);
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // As Node does: answer unless the client is gone or a response has begun on this connection
  // (writing then would corrupt it).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request headers are too large.']
      : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? [413, 'The chunk extensions are too large.']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request took too long to arrive.']
          : [400, 'The request is not valid HTTP/1.1 (framing, request line or header bytes).'];
  const problem = problemOfStatus(status, detail);
  const body = JSON.stringify(problem.toJSON());
  socket.end(
    `HTTP/1.1 ${status} ${problem.title}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\n' +
      'Connection: close\r\n\r\n' +
      body,
  );
}
