import { defineRoute, notFound, type Pool, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { tenantSchema, updateTenantBody } from '@tokenvault/contracts';
import type { TenantCommands } from '../commands/tenants.commands.ts';
import { getTenant } from '../queries/tenants.queries.ts';

/** What the tenant routes use, built by the tenancy manifest's `routes(deps)` (context.ts). */
export interface TenantRouteDeps {
  commands: Pick<TenantCommands, 'update' | 'delete'>;
  /** The app-role pool `getTenant` reads from. */
  appPool: Pool;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

/** `self` is always the tenant that owns the calling key. */
export function tenantRoutes({ commands, appPool, consistency }: TenantRouteDeps): RouteDefinition[] {
  const tag = 'Tenant';
  return [
    defineRoute({
      method: 'get',
      path: '/tenants/self',
      operationId: 'getTenant',
      summary: 'Get the tenant of the calling key',
      tag,
      permission: 'tenant:read',
      returnsSensitive: [],
      responses: { 200: { description: 'The tenant', schema: tenantSchema } },
      async handle({ principal }) {
        const tenant = await getTenant(appPool, principal.tenantId);
        if (!tenant) throw notFound('No such tenant.');
        return { status: 200, body: tenant };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/tenants/self',
      operationId: 'updateTenant',
      summary: 'Rename the tenant and change its settings',
      tag,
      permission: 'tenant:update',
      returnsSensitive: [],
      body: updateTenantBody,
      responses: { 200: { description: 'The updated tenant', schema: tenantSchema } },
      async handle({ principal, body, requestId }) {
        const updated = await commands.update(principal, body, requestId);
        return { status: 200, headers: await consistency.afterWrite(updated.position), body: updated.tenant };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tenants/self',
      operationId: 'deleteTenant',
      summary: 'Delete the tenant: every key stops working and its data becomes undecryptable',
      tag,
      permission: 'tenant:delete',
      returnsSensitive: [],
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, requestId }) {
        const deleted = await commands.delete(principal, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
