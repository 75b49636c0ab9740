import { z } from 'zod';
import { defineRoute, type Pool, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { entityTypeSchema, listLogsQuery, logPageSchema } from '@tokenvault/contracts';
import { entityTypes } from '../mappings.ts';
import { listLogs } from '../queries/logs.queries.ts';

export function logRoutes({
  appPool,
  consistency,
}: {
  appPool: Pool;
  consistency: ReadModelConsistency;
}): RouteDefinition[] {
  const tag = 'Logs';
  return [
    defineRoute({
      method: 'get',
      path: '/logs',
      operationId: 'listLogs',
      summary: 'List the audit log, newest first, filtered by entity and date range',
      tag,
      permission: 'log:read',
      returnsSensitive: [],
      query: listLogsQuery,
      responses: { 200: { description: 'A page of log entries', schema: logPageSchema } },
      async handle({ principal, query }) {
        // The log is written by the projector: it first catches up with every write made so far.
        const headers = await consistency.beforeTrailingRead();
        return { status: 200, headers, body: await listLogs(appPool, principal.tenantId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/logs/entity-types',
      operationId: 'listLogEntityTypes',
      summary: 'The entity types the audit log names',
      tag,
      permission: 'log:read',
      returnsSensitive: [],
      responses: { 200: { description: 'Entity types', schema: z.array(entityTypeSchema) } },
      async handle() {
        return { status: 200, body: entityTypes };
      },
    }),
  ];
}
