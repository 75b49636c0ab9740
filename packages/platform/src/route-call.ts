import type { IncomingHttpHeaders } from 'node:http';
import { badRequest, forbidden } from './errors.ts';
import {
  anyCaller,
  bodyMayBeLeftOut,
  holdsPermission,
  parseRouteInput,
  type HandlerResult,
  type Principal,
  type RouteDefinition,
} from './route.ts';

/** What a request carries to a route, already decoded (path parameters, query, JSON body). */
export interface RouteInput {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
  headers?: IncomingHttpHeaders;
  clientAddress?: string;
}

/**
 * Runs a route as the principal would over HTTP: the same permission check, the same schemas,
 * the same handler. Used by HTTP (mountRoutes) and by callers inside the service that act as an
 * application without its key (a reactor's `svc` client).
 */
export async function callRoute(
  route: RouteDefinition,
  input: RouteInput,
  principal: Principal,
  requestId: string,
): Promise<HandlerResult> {
  if (
    route.permission !== null &&
    route.permission !== anyCaller &&
    !holdsPermission(principal, route.permission)
  ) {
    throw forbidden(`This API key lacks the permission ${route.permission}.`);
  }
  if (route.body && input.body === undefined && !bodyMayBeLeftOut(route)) {
    throw badRequest('A JSON body is required (Content-Type: application/json).', {
      body: ['Required'],
    });
  }
  const parsed = parseRouteInput(route, input);
  return route.handle({
    ...parsed,
    principal,
    requestId,
    headers: input.headers ?? {},
    ...(input.clientAddress === undefined ? {} : { clientAddress: input.clientAddress }),
  });
}
