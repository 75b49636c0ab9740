import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One request a destination received, as it received it. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type DestinationBehaviour = (request: Received, res: ServerResponse) => void;

/**
 * A third party on loopback for proxy tests: it records every request and answers as told
 * (by default 201 with JSON saying what it got, and a header of its own).
 */
export interface TestDestination {
  url: string;
  received: Received[];
  /** How the next requests are answered (until changed). */
  answer(behaviour: DestinationBehaviour): void;
  close(): Promise<void>;
}

export const echoAnswer: DestinationBehaviour = (request, res) => {
  res.writeHead(201, { 'content-type': 'application/json', 'x-destination': 'echo' });
  res.end(
    JSON.stringify({
      method: request.method,
      url: request.url,
      body: request.body.toString('utf8'),
    }),
  );
};

function recording(received: Received[], behaviour: () => DestinationBehaviour) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      received.push(request);
      behaviour()(request, res);
    });
  };
}

async function listening(
  server: import('node:http').Server,
  host: string,
  scheme: string,
  received: Received[],
  setBehaviour: (behaviour: DestinationBehaviour) => void,
): Promise<TestDestination> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${scheme}://${host}:${port}`,
    received,
    answer: setBehaviour,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A plain http destination on a loopback address. */
export async function startHttpDestination(host = '127.0.0.1'): Promise<TestDestination> {
  const received: Received[] = [];
  let behaviour = echoAnswer;
  const server = createServer(recording(received, () => behaviour));
  return listening(server, host, 'http', received, (next) => (behaviour = next));
}

/** A self-signed certificate for 127.0.0.1 (and localhost), made with openssl for this run. */
export function makeCertificate(): { key: string; cert: string; certFile: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'tv-proxy-cert-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return {
    key: readFileSync(key, 'utf8'),
    cert: readFileSync(cert, 'utf8'),
    certFile: cert,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** An https destination on 127.0.0.1 with the given certificate. */
export async function startHttpsDestination(credentials: {
  key: string;
  cert: string;
}): Promise<TestDestination> {
  const received: Received[] = [];
  let behaviour = echoAnswer;
  const server = createHttpsServer(
    credentials,
    recording(received, () => behaviour),
  );
  return listening(server, '127.0.0.1', 'https', received, (next) => (behaviour = next));
}
