import { ServiceCallError } from '@tokenvault/sandbox';
import {
  asProblem,
  callRoute,
  type HandlerResult,
  type Principal,
  type RouteDefinition,
  type RouteInput,
} from '@tokenvault/platform';
import { isPlainObject } from '@tokenvault/expressions';

/**
 * The methods of a reactor's `svc` client, named as Basis Theory's SDK names them, each one
 * of the service's own routes called in-process as the reactor's application: the same schemas,
 * permission checks, audit and events as over HTTP, without a key in plaintext anywhere.
 */
const serviceMethods: Record<
  string,
  {
    route: string;
    input(args: unknown[]): RouteInput;
    /** The tokens whose data the answer holds (methods that read token data), as answered. */
    tokensRead?(body: unknown): unknown[];
  }
> = {
  'tokens.create': { route: 'post /tokens', input: ([body]) => ({ body }) },
  'tokens.retrieve': {
    route: 'get /tokens/:id',
    input: ([id]) => ({ params: { id: String(id) } }),
    tokensRead: (body) => [body],
  },
  'tokens.delete': { route: 'delete /tokens/:id', input: ([id]) => ({ params: { id: String(id) } }) },
  'tokens.createAssociation': {
    route: 'post /tokens/:parent_id/children/:child_id',
    input: ([parentId, childId]) => ({ params: { parent_id: String(parentId), child_id: String(childId) } }),
  },
  'tokens.deleteAssociation': {
    route: 'delete /tokens/:parent_id/children/:child_id',
    input: ([parentId, childId]) => ({ params: { parent_id: String(parentId), child_id: String(childId) } }),
  },
  'tokens.createChild': {
    route: 'post /tokens/:parent_id/children',
    input: ([parentId, body]) => ({ params: { parent_id: String(parentId) }, body }),
  },
  'tokens.listChildren': {
    route: 'get /tokens/:parent_id/children',
    input: ([parentId, query]) => ({
      params: { parent_id: String(parentId) },
      query: isPlainObject(query) ? query : {},
    }),
    tokensRead: (body) => (isPlainObject(body) && Array.isArray(body.data) ? (body.data as unknown[]) : []),
  },
};

/** Each token a run's `svc` read, by id: what decides a read of it (its containers and privacy, as answered). */
export type TokensAnswered = Map<string, { containers: string[]; privacy?: unknown }>;

/** A token of an answer: its id, and what decided its read. */
function answeredToken(token: unknown): [string, { containers: string[]; privacy?: unknown }] | undefined {
  if (!isPlainObject(token) || typeof token.id !== 'string') return undefined;
  const containers = Array.isArray(token.containers)
    ? token.containers.filter((container): container is string => typeof container === 'string')
    : [];
  return [token.id, { containers, ...(token.privacy === undefined ? {} : { privacy: token.privacy }) }];
}

export const serviceMethodNames: readonly string[] = Object.keys(serviceMethods);

export class ServiceClient {
  private readonly routes = new Map<string, RouteDefinition>();

  constructor(routes: readonly RouteDefinition[]) {
    for (const route of routes) this.routes.set(`${route.method} ${route.path}`, route);
    for (const { route } of Object.values(serviceMethods)) {
      if (!this.routes.has(route)) throw new Error(`svc needs the route ${route}, which is not composed`);
    }
  }

  /** Calls a route by its method and path as this principal; problems are thrown as they are. */
  call(routeKey: string, input: RouteInput, principal: Principal, requestId: string): Promise<HandlerResult> {
    const route = this.routes.get(routeKey);
    if (!route) throw new Error(`no route ${routeKey}`);
    return callRoute(route, input, principal, requestId);
  }

  /**
   * A guest's `svc.<method>(...args)`: the response body, or a ServiceCallError (the route's
   * problem). The ids of the tokens whose data it answered are added to `tokensRead`, and each
   * such token as answered to `answered`.
   */
  async invoke(
    method: string,
    args: unknown[],
    principal: Principal,
    requestId: string,
    tokensRead: Set<string>,
    answered?: TokensAnswered,
  ): Promise<unknown> {
    const known = Object.hasOwn(serviceMethods, method) ? serviceMethods[method] : undefined;
    if (!known) throw new ServiceCallError(`svc has no method ${method}.`, 400);
    try {
      const result = await this.call(known.route, known.input(args), principal, requestId);
      for (const token of known.tokensRead?.(result.body) ?? []) {
        const [id, target] = answeredToken(token) ?? [];
        if (id === undefined) continue;
        tokensRead.add(id);
        answered?.set(id, target!);
      }
      return result.body ?? null;
    } catch (error) {
      // The guest sees the problem as Basis Theory's SDK error (status and data); anything else is
      // logged by the sandbox and reaches the guest only as "Service call failed".
      const problem = asProblem(error);
      if (problem)
        throw new ServiceCallError(problem.detail ?? problem.title, problem.status, problem.toJSON());
      throw error;
    }
  }
}
