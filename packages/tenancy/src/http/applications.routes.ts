import { z } from 'zod';
import { defineRoute, notFound, pageQuery, paginated, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import {
  applicationSchema,
  createApplicationBody,
  createdApplicationSchema,
  idParams,
  paginatedSchema,
  updateApplicationBody,
} from '@tokenvault/contracts';
import type { ApplicationCommands } from '../commands/applications.commands.ts';
import type { ApplicationQueries } from '../queries/applications.queries.ts';

/** What the application routes use, built by the tenancy manifest's `routes(deps)` (context.ts). */
export interface ApplicationRouteDeps {
  commands: Pick<ApplicationCommands, 'create' | 'update' | 'delete'>;
  queries: Pick<ApplicationQueries, 'list' | 'get'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

const missing = () => notFound('No application with this id.');

export function applicationRoutes({
  commands,
  queries,
  consistency,
}: ApplicationRouteDeps): RouteDefinition[] {
  const tag = 'Applications';
  return [
    defineRoute({
      method: 'post',
      path: '/applications',
      operationId: 'createApplication',
      summary: 'Create an application and its API key (shown only in this response)',
      tag,
      permission: 'application:create',
      body: createApplicationBody,
      responses: { 201: { description: 'Created', schema: createdApplicationSchema } },
      async handle({ principal, body, requestId }) {
        const created = await commands.create(principal, body, requestId);
        return {
          status: 201,
          headers: await consistency.afterWrite(created.position),
          body: { ...created.application, key: created.key },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/applications',
      operationId: 'listApplications',
      summary: 'List applications',
      tag,
      permission: 'application:read',
      query: z.strictObject(pageQuery(100)),
      responses: {
        200: { description: 'A page of applications', schema: paginatedSchema(applicationSchema) },
      },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(principal.tenantId, query.page, query.size);
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/applications/:id',
      operationId: 'getApplication',
      summary: 'Get an application',
      tag,
      permission: 'application:read',
      params: idParams,
      responses: { 200: { description: 'The application', schema: applicationSchema } },
      async handle({ principal, params }) {
        const application = await queries.get(principal.tenantId, params.id);
        if (!application) throw missing();
        return { status: 200, body: application };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/applications/:id',
      operationId: 'updateApplication',
      summary: 'Replace an application’s name and grants',
      tag,
      permission: 'application:update',
      params: idParams,
      body: updateApplicationBody,
      responses: { 200: { description: 'The updated application', schema: applicationSchema } },
      async handle({ principal, params, body, requestId }) {
        const updated = await commands.update(principal, params.id, body, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(updated.position),
          body: updated.application,
        };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/applications/:id',
      operationId: 'deleteApplication',
      summary: 'Delete an application; its key stops working at once',
      tag,
      permission: 'application:delete',
      params: idParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
