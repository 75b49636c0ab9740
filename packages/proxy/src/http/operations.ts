import { z } from 'zod';
import { defineRoute, notFound, type RouteDefinition } from '@tokenvault/platform';
import { proxyMethods, proxyUrlHeader } from './proxy-invoke.routes.ts';

const proxyPathParams = z.object({
  path: z.string().meta({
    description:
      'The rest of the path, appended to the destination URL’s path (with the query). A `.` or `..` segment in any form (percent-encoded, between `\\`, `%2f` or `%5c`) is a 400: the path stays under the destination’s.',
  }),
});

/**
 * `/proxy/**` in the OpenAPI document. The gateway serves these paths with ProxyGateway (any
 * media type in and out), mounted ahead of the JSON routes: these entries only describe them. No
 * request body is declared: any body (or none) is forwarded, JSON, form-encoded and text ones
 * with their expressions rendered, others as bytes.
 */
export const proxyOperations: RouteDefinition[] = proxyMethods.map((method) =>
  defineRoute({
    method,
    path: '/proxy/:path',
    operationId: `invokeProxy${method[0]!.toUpperCase()}${method.slice(1)}`,
    summary: `Send a ${method.toUpperCase()} to the destination in ${proxyUrlHeader}, detokenizing {{ … }} expressions in headers and body on the way; the destination’s status and body come back, its headers less cookies, CORS and site policies, under an inert CSP. Takes an API key, never a member’s session; no SVC-* header or cookie is forwarded`,
    tag: 'Proxy',
    permission: 'proxy:invoke',
    returnsSensitive: ['token-data'],
    params: proxyPathParams,
    responses: {
      200: {
        description:
          'The destination’s status and body; its headers less Set-Cookie, CORS, CSP and site-wide policies, with Content-Security-Policy: sandbox and X-Content-Type-Options: nosniff',
      },
      408: { description: 'The destination did not answer within PROXY_TIMEOUT_MS' },
      413: { description: 'The request body exceeds PROXY_MAX_REQUEST_BYTES (or BODY_LIMIT for JSON)' },
      502: {
        description: 'The destination could not be reached, or its answer exceeds PROXY_MAX_RESPONSE_BYTES',
      },
    },
    handle() {
      // Never reached: ProxyGateway answers /proxy/** before the JSON routes.
      return Promise.reject(notFound());
    },
  }),
);
