import type { NextFunction, Request, Response } from 'express';
import { forbidden } from './errors.ts';

/** The methods of the API's routes. */
const allowedMethods = 'GET, POST, PUT, PATCH, DELETE';

/**
 * What a page on an allowed origin may send: an API key (the service's name or Basis Theory's),
 * idempotency and trace headers, the proxy's key and URL. Not `Authorization` nor
 * `SVC-TENANT-ID`: those carry or select a member's session, which a page of another origin
 * never uses.
 */
const allowedRequestHeaders = [
  'content-type',
  'svc-api-key',
  'bt-api-key',
  'idempotency-key',
  'svc-idempotency-key',
  'bt-idempotency-key',
  'svc-proxy-key',
  'bt-proxy-key',
  'svc-proxy-url',
  'bt-proxy-url',
  'x-request-id',
  'bt-trace-id',
  'traceparent',
].join(', ');

/** What such a page may read of an answer beyond the CORS-safelisted headers. */
const exposedHeaders = [
  'x-request-id',
  'location',
  'retry-after',
  'ratelimit',
  'ratelimit-policy',
  'x-read-model-lagging',
  'idempotency-replayed',
  'idempotency-withheld-fields',
].join(', ');

/**
 * CORS for API-key requests from browser pages of the listed origins (CORS_ALLOWED_ORIGINS,
 * none by default). Never with credentials: `Access-Control-Allow-Credentials` is never sent, so
 * a browser neither sends the console's cookie cross-origin nor exposes an answer to a request
 * that carried one (and the session authenticator refuses a cookie on a cross-origin request).
 * A preflight from an origin not listed is a 403; an actual request from one gets no CORS
 * headers, so the browser keeps the answer from the page.
 */
export function corsPolicy(allowedOrigins: readonly string[]) {
  const allowed = new Set(allowedOrigins);
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.get('origin');
    if (origin === undefined) return next();
    res.vary('Origin');
    const preflight = req.method === 'OPTIONS' && req.get('access-control-request-method') !== undefined;
    if (!allowed.has(origin)) {
      if (preflight) return next(forbidden('This origin is not allowed (CORS_ALLOWED_ORIGINS).'));
      return next();
    }
    res.setHeader('access-control-allow-origin', origin);
    if (!preflight) {
      res.setHeader('access-control-expose-headers', exposedHeaders);
      return next();
    }
    res.setHeader('access-control-allow-methods', allowedMethods);
    res.setHeader('access-control-allow-headers', allowedRequestHeaders);
    res.setHeader('access-control-max-age', '600');
    res.status(204).end();
  };
}
