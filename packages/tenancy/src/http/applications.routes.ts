import { z } from 'zod';
import {
  anyCaller,
  defineRoute,
  forbidden,
  notFound,
  pageQuery,
  paginated,
  type RouteDefinition,
} from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import {
  applicationKeyParams,
  applicationKeySchema,
  applicationSchema,
  createApplicationBody,
  createApplicationKeyBody,
  createdApplicationKeySchema,
  createdApplicationSchema,
  idParams,
  paginatedSchema,
  updateApplicationBody,
} from '@tokenvault/contracts';
import type { ApplicationCommands } from '../commands/applications.commands.ts';
import type { ApplicationQueries } from '../queries/applications.queries.ts';

/** What the application routes use, built by the tenancy manifest's `routes(deps)` (context.ts). */
export interface ApplicationRouteDeps {
  commands: Pick<ApplicationCommands, 'create' | 'update' | 'delete' | 'createKey' | 'deleteKey'>;
  queries: Pick<ApplicationQueries, 'list' | 'get' | 'listKeys' | 'getKey'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

const missing = () => notFound('No application with this id.');
const keyMissing = () => notFound('The application has no key with this id.');

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
      returnsSensitive: ['api-key'],
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
      returnsSensitive: [],
      query: z.strictObject(pageQuery(100)),
      responses: {
        200: { description: 'A page of applications', schema: paginatedSchema(applicationSchema) },
      },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(principal.tenantId, query.page, query.size);
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    // Before /applications/:id, which would take `key` for an id.
    defineRoute({
      method: 'get',
      path: '/applications/key',
      operationId: 'getApplicationByKey',
      summary: 'Get the application of the calling API key',
      tag,
      permission: anyCaller,
      returnsSensitive: [],
      responses: { 200: { description: 'The caller’s own application', schema: applicationSchema } },
      async handle({ principal }) {
        if (principal.actorType !== 'application') {
          throw forbidden(
            'GET /applications/key answers the application of the calling API key; a member’s session belongs to none. Call it with SVC-API-KEY.',
          );
        }
        const application = await queries.get(principal.tenantId, principal.actorId);
        if (!application) throw missing();
        return { status: 200, body: application };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/applications/:id',
      operationId: 'getApplication',
      summary: 'Get an application',
      tag,
      permission: 'application:read',
      returnsSensitive: [],
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
      returnsSensitive: [],
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
      returnsSensitive: [],
      params: idParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/applications/:id/keys',
      operationId: 'createApplicationKey',
      summary: 'Create another key for an application (shown only in this response)',
      tag,
      permission: 'application:update',
      returnsSensitive: ['api-key'],
      params: idParams,
      body: createApplicationKeyBody,
      responses: { 201: { description: 'Created', schema: createdApplicationKeySchema } },
      async handle({ principal, params, body, requestId }) {
        const created = await commands.createKey(principal, params.id, body, requestId);
        return { status: 201, headers: await consistency.afterWrite(created.position), body: created.key };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/applications/:id/keys',
      operationId: 'listApplicationKeys',
      summary: 'List an application’s keys (never the keys themselves)',
      tag,
      permission: 'application:read',
      returnsSensitive: [],
      params: idParams,
      responses: { 200: { description: 'The keys, oldest first', schema: z.array(applicationKeySchema) } },
      async handle({ principal, params }) {
        const keys = await queries.listKeys(principal.tenantId, params.id);
        if (!keys) throw missing();
        return { status: 200, body: keys };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/applications/:id/keys/:key_id',
      operationId: 'getApplicationKey',
      summary: 'Get one of an application’s keys (never the key itself)',
      tag,
      permission: 'application:read',
      returnsSensitive: [],
      params: applicationKeyParams,
      responses: { 200: { description: 'The key’s id and dates', schema: applicationKeySchema } },
      async handle({ principal, params }) {
        const key = await queries.getKey(principal.tenantId, params.id, params.key_id);
        if (!key) throw keyMissing();
        return { status: 200, body: key };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/applications/:id/keys/:key_id',
      operationId: 'deleteApplicationKey',
      summary: 'Delete one of an application’s keys; it stops working at once',
      tag,
      permission: 'application:update',
      returnsSensitive: [],
      params: applicationKeyParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.deleteKey(principal, params.id, params.key_id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
