import type { Request, Response } from 'express';
import type { HandlerResult, Principal, RouteDefinition } from './route.ts';

/** One HTTP call of a route with an API key, its principal already resolved. */
export interface GuardedCall {
  route: RouteDefinition;
  req: Request;
  res: Response;
  principal: Principal;
}

/**
 * Wraps every API-key route call made over HTTP (not in-process calls): may set headers on the
 * response, refuse the call with a Problem, answer it without running it (a replay), or run it.
 */
export type RouteGuard = (call: GuardedCall, run: () => Promise<HandlerResult>) => Promise<HandlerResult>;
