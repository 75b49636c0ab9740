import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes exactly as given over a fresh TCP connection and reads the answer until the server
 * closes it: for requests no HTTP client would send (bad framing, raw `%`, non-ASCII bytes).
 * The request should say `Connection: close` (or be one the server closes on). The connection is
 * half-closed once the request is sent, unless `halfClose` is false: Node's server then ends it at
 * once, so a request the server answers asynchronously (the proxy's) must keep it open.
 */
export function sendRaw(
  baseUrl: string,
  request: string | Buffer,
  { halfClose = true }: { halfClose?: boolean } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...headerLines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    if (halfClose) socket.end(request);
    else socket.write(request);
  });
}
