import { z } from 'zod';
import {
  defineRoute,
  notFound,
  pageQuery,
  paginated,
  repeatable,
  type RouteDefinition,
} from '@tokenvault/platform';
import {
  createReactorBody,
  idParams,
  nameFilter,
  paginatedSchema,
  patchReactorBody,
  reactorSchema,
  updateReactorBody,
  uuid,
} from '@tokenvault/contracts';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import type { ReactorCommands } from '../commands/reactors.commands.ts';
import type { ReactorQueries } from '../queries/reactors.queries.ts';

/** What the reactor routes use, built by the reactors manifest's `routes(deps)` (context.ts). */
export interface ReactorRouteDeps {
  commands: Pick<ReactorCommands, 'create' | 'update' | 'patch' | 'delete'>;
  queries: Pick<ReactorQueries, 'list' | 'get'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

const missing = () => notFound('No reactor with this id.');

export function reactorRoutes({ commands, queries, consistency }: ReactorRouteDeps): RouteDefinition[] {
  const tag = 'Reactors';
  return [
    defineRoute({
      method: 'post',
      path: '/reactors',
      operationId: 'createReactor',
      summary: 'Create a reactor of a formula, with its configuration and, optionally, an application',
      tag,
      permission: 'reactor:create',
      returnsSensitive: ['configuration'],
      body: createReactorBody,
      responses: { 201: { description: 'Created', schema: reactorSchema } },
      async handle({ principal, body, requestId }) {
        const created = await commands.create(principal, body, requestId);
        return {
          status: 201,
          headers: await consistency.afterWrite(created.position),
          body: created.reactor,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/reactors',
      operationId: 'listReactors',
      summary: 'List reactors (id repeatable; name: case-insensitive, * matches any run of characters)',
      tag,
      permission: 'reactor:read',
      returnsSensitive: ['configuration'],
      query: z.strictObject({ id: repeatable(uuid), name: nameFilter, ...pageQuery(100) }),
      responses: { 200: { description: 'A page of reactors', schema: paginatedSchema(reactorSchema) } },
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
      path: '/reactors/:id',
      operationId: 'getReactor',
      summary: 'Get a reactor',
      tag,
      permission: 'reactor:read',
      returnsSensitive: ['configuration'],
      params: idParams,
      responses: { 200: { description: 'The reactor', schema: reactorSchema } },
      async handle({ principal, params }) {
        const reactor = await queries.get(principal.tenantId, params.id);
        if (!reactor) throw missing();
        return { status: 200, body: reactor };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/reactors/:id',
      operationId: 'updateReactor',
      summary: 'Replace a reactor’s name, configuration and application (its formula never changes)',
      tag,
      permission: 'reactor:update',
      returnsSensitive: ['configuration'],
      params: idParams,
      body: updateReactorBody,
      responses: { 200: { description: 'The updated reactor', schema: reactorSchema } },
      async handle({ principal, params, body, requestId }) {
        const updated = await commands.update(principal, params.id, body, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(updated.position),
          body: updated.reactor,
        };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/reactors/:id',
      operationId: 'updateReactorFields',
      summary: 'Change the fields named (application: null unbinds it); the whole reactor is checked again',
      tag,
      permission: 'reactor:update',
      returnsSensitive: ['configuration'],
      params: idParams,
      body: patchReactorBody,
      bodyMediaTypes: ['application/merge-patch+json', 'application/json'],
      responses: { 200: { description: 'The updated reactor', schema: reactorSchema } },
      async handle({ principal, params, body, requestId }) {
        const updated = await commands.patch(principal, params.id, body, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(updated.position),
          body: updated.reactor,
        };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/reactors/:id',
      operationId: 'deleteReactor',
      summary: 'Delete a reactor',
      tag,
      permission: 'reactor:delete',
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
