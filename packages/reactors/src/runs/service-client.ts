import {
  Problem,
  callRoute,
  type HandlerResult,
  type Principal,
  type RouteDefinition,
  type RouteInput,
} from '@tokenvault/platform';

/**
 * The methods of a reactor's `svc` client, named as the hosted anchor's SDK names them, each one
 * of the service's own routes called in-process as the reactor's application: the same schemas,
 * permission checks, audit and events as over HTTP, without a key in plaintext anywhere.
 */
const serviceMethods: Record<string, { route: string; input(args: unknown[]): RouteInput }> = {
  'tokens.create': { route: 'post /tokens', input: ([body]) => ({ body }) },
  'tokens.retrieve': { route: 'get /tokens/:id', input: ([id]) => ({ params: { id: String(id) } }) },
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
  },
};

export const serviceMethodNames: readonly string[] = Object.keys(serviceMethods);

/** An error a guest's `svc` call rejects with: the route's problem, status and field errors. */
export class ServiceCallError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.title);
    this.name = 'ServiceCallError';
  }
}

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

  /** A guest's `svc.<method>(...args)`: the response body, or a ServiceCallError. */
  async invoke(method: string, args: unknown[], principal: Principal, requestId: string): Promise<unknown> {
    const known = Object.hasOwn(serviceMethods, method) ? serviceMethods[method] : undefined;
    if (!known) throw new ServiceCallError(new Problem(400, 'bad-request', 'Bad Request', `svc has no method ${method}.`));
    try {
      const result = await this.call(known.route, known.input(args), principal, requestId);
      return result.body ?? null;
    } catch (error) {
      if (error instanceof Problem) throw new ServiceCallError(error);
      throw error;
    }
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
