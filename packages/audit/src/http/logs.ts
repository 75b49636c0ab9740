import { z } from 'zod';
import { defineRoute, type Pool, type RouteDefinition } from '@tokenvault/platform';
import { entityTypeSchema, listLogsQuery, logPageSchema } from '@tokenvault/contracts';
import { entityTypes } from '../mappings.ts';
import { listLogs } from '../queries/logs.ts';

export function logRoutes({ appPool }: { appPool: Pool }): RouteDefinition[] {
  const tag = 'Logs';
  return [
    defineRoute({
      method: 'get',
      path: '/logs',
      summary: 'List the audit log, newest first, filtered by entity and date range',
      tag,
      permission: 'log:read',
      query: listLogsQuery,
      responses: { 200: { description: 'A page of log entries', schema: logPageSchema } },
      async handle({ principal, query }) {
        return { status: 200, body: await listLogs(appPool, principal.tenantId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/logs/entity-types',
      summary: 'The entity types the audit log names',
      tag,
      permission: 'log:read',
      responses: { 200: { description: 'Entity types', schema: z.array(entityTypeSchema) } },
      async handle() {
        return { status: 200, body: entityTypes };
      },
    }),
  ];
}
