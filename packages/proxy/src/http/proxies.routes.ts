import { z } from 'zod';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { defineRoute, pageQuery, paginated, repeatable, type RouteDefinition } from '@tokenvault/platform';
import {
  idParams,
  nameFilter,
  paginatedSchema,
  patchProxyBody,
  proxyBody,
  proxySchema,
  uuid,
} from '@tokenvault/contracts';
import type { ProxyCommands } from '../commands/proxies.commands.ts';
import { proxyMissing } from '../domain/proxy.ts';
import type { ProxyQueries } from '../queries/proxies.queries.ts';

/** What the proxy routes use, built by the proxy manifest's `routes(deps)` (context.ts). */
export interface ProxyRouteDeps {
  commands: Pick<ProxyCommands, 'create' | 'update' | 'patch' | 'delete'>;
  queries: Pick<ProxyQueries, 'list' | 'get' | 'response'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

export function proxyRoutes({ commands, queries, consistency }: ProxyRouteDeps): RouteDefinition[] {
  const tag = 'Proxies';
  const written = async (
    status: 200 | 201,
    outcome: Awaited<ReturnType<ProxyCommands['create']>>,
  ): Promise<{ status: 200 | 201; headers: Record<string, string>; body: z.output<typeof proxySchema> }> => ({
    status,
    headers: await consistency.afterWrite(outcome.position),
    body: await queries.response(outcome.row),
  });
  return [
    defineRoute({
      method: 'post',
      path: '/proxies',
      operationId: 'createProxy',
      summary: 'Create a pre-configured proxy (its key is generated)',
      tag,
      permission: 'proxy:create',
      returnsSensitive: ['proxy-key', 'configuration'],
      body: proxyBody,
      responses: { 201: { description: 'Created', schema: proxySchema } },
      async handle({ principal, body, requestId }) {
        return written(201, await commands.create(principal, body, requestId));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/proxies',
      operationId: 'listProxies',
      summary: 'List proxies (id repeatable; name: case-insensitive, * matches any run of characters)',
      tag,
      permission: 'proxy:read',
      returnsSensitive: ['proxy-key', 'configuration'],
      query: z.strictObject({ id: repeatable(uuid), name: nameFilter, ...pageQuery(100) }),
      responses: { 200: { description: 'A page of proxies', schema: paginatedSchema(proxySchema) } },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(
          principal.tenantId,
          { ids: query.id, name: query.name },
          query.page,
          query.size,
        );
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/proxies/:id',
      operationId: 'getProxy',
      summary: 'Get a proxy',
      tag,
      permission: 'proxy:read',
      returnsSensitive: ['proxy-key', 'configuration'],
      params: idParams,
      responses: { 200: { description: 'The proxy', schema: proxySchema } },
      async handle({ principal, params }) {
        const proxy = await queries.get(principal.tenantId, params.id);
        if (!proxy) throw proxyMissing();
        return { status: 200, body: proxy };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/proxies/:id',
      operationId: 'updateProxy',
      summary: 'Replace a proxy’s settings (its key never changes)',
      tag,
      permission: 'proxy:update',
      returnsSensitive: ['proxy-key', 'configuration'],
      params: idParams,
      body: proxyBody,
      responses: { 200: { description: 'The updated proxy', schema: proxySchema } },
      async handle({ principal, params, body, requestId }) {
        return written(200, await commands.update(principal, params.id, body, requestId));
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/proxies/:id',
      operationId: 'updateProxyFields',
      summary: 'Change the settings named (null removes an optional one)',
      tag,
      permission: 'proxy:update',
      returnsSensitive: ['proxy-key', 'configuration'],
      params: idParams,
      body: patchProxyBody,
      responses: { 200: { description: 'The updated proxy', schema: proxySchema } },
      async handle({ principal, params, body, requestId }) {
        return written(200, await commands.patch(principal, params.id, body, requestId));
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/proxies/:id',
      operationId: 'deleteProxy',
      summary: 'Delete a proxy (its key stops working)',
      tag,
      permission: 'proxy:delete',
      returnsSensitive: [],
      params: idParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
