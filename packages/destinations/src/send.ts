import {
  request as httpRequest,
  type Agent,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { badGateway, requestTimeout, type Problem } from '@tokenvault/platform';
import type { Destination } from './resolve.ts';

export interface OutgoingRequest {
  method: string;
  headers: OutgoingHttpHeaders;
  body?: Buffer;
}

export interface DestinationResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface SendLimits {
  /** The whole exchange, connection to last byte. */
  timeoutMs: number;
  maxResponseBytes: number;
  /** Certificate authorities trusted for https destinations (undefined: the system's). */
  ca?: string[];
}

export const destinationTimeout = () => requestTimeout('The destination did not answer in time.');

/**
 * Sends one request to the checked destination and reads its whole answer. The connection goes
 * to `destination.address` (the address checked), while TLS (SNI, certificate) and `Host` use
 * the URL's host name. Redirects are answers like any other: never followed. With `pool`, the
 * connection comes from it and goes back to it (DestinationConnections.poolFor, for this very
 * destination); without, a new connection is opened and closed.
 */
export function sendToDestination(
  destination: Destination,
  outgoing: OutgoingRequest,
  limits: SendLimits,
  pool?: Agent,
): Promise<DestinationResponse> {
  const { url, address, family } = destination;
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (error: null, addresses: { address: string; family: number }[]) => void)(null, [
        { address, family },
      ]);
    } else callback(null, address, family);
  };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const signal = AbortSignal.timeout(limits.timeoutMs);
    const request = send(
      url,
      {
        method: outgoing.method,
        headers: outgoing.headers,
        lookup: pinned,
        signal,
        agent: pool ?? false,
        ...(limits.ca ? { ca: limits.ca } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limits.maxResponseBytes) {
            request.destroy();
            reject(badGateway(`The destination’s response exceeds ${limits.maxResponseBytes} bytes.`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 502,
            headers: response.headers,
            body: Buffer.concat(chunks),
          }),
        );
        response.on('error', (error) => reject(failure(error, signal)));
      },
    );
    request.on('error', (error) => reject(failure(error, signal)));
    request.end(outgoing.body);
  });
}

/** A timeout is a 408; anything else (refused, reset, TLS) a 502 that names no address. */
function failure(error: Error, signal: AbortSignal): Problem {
  if (signal.aborted) return destinationTimeout();
  const code = (error as { code?: string }).code;
  return badGateway(`The destination could not be reached${code ? ` (${code})` : ''}.`);
}
