import { z } from 'zod';
import { anyCaller, defineRoute, type RouteDefinition } from '@tokenvault/platform';
import {
  describePermissions,
  listPermissionsQuery,
  permissionDescriptionSchema,
} from '@tokenvault/contracts';

/** `GET /permissions`: what an application may be given, read from the contracts (no state). */
export function permissionRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/permissions',
      operationId: 'listPermissions',
      summary: 'List the permissions an application may hold, with the application types that may hold each',
      tag: 'Applications',
      permission: anyCaller,
      returnsSensitive: [],
      query: listPermissionsQuery,
      responses: {
        200: { description: 'Every permission', schema: z.array(permissionDescriptionSchema) },
      },
      handle({ query }) {
        return Promise.resolve({ status: 200, body: describePermissions(query.application_type) });
      },
    }),
  ];
}
