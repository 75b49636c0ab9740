import { z } from 'zod';
import { defineRoute, pageQuery, paginated, repeatable, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { idParams, memberSchema, paginatedSchema, uuid } from '@tokenvault/contracts';
import type { MemberCommands } from '../commands/members.commands.ts';
import type { MemberQueries } from '../queries/members.queries.ts';

/** What the member routes use, built by the tenancy manifest's `routes(deps)` (context.ts). */
export interface MemberRouteDeps {
  commands: Pick<MemberCommands, 'remove'>;
  queries: Pick<MemberQueries, 'list'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

export function memberRoutes({ commands, queries, consistency }: MemberRouteDeps): RouteDefinition[] {
  const tag = 'Tenant members';
  return [
    defineRoute({
      method: 'get',
      path: '/tenants/self/members',
      operationId: 'listMembers',
      summary: 'List the members of the tenant, with their users',
      tag,
      permission: 'tenant:member:read',
      returnsSensitive: [],
      query: z.strictObject({ user_id: repeatable(uuid), ...pageQuery(50) }),
      responses: { 200: { description: 'A page of members', schema: paginatedSchema(memberSchema) } },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(
          principal.tenantId,
          { userIds: query.user_id },
          query.page,
          query.size,
        );
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tenants/self/members/:id',
      operationId: 'deleteMember',
      summary: 'Remove a member from the tenant (the OWNER member cannot be removed: 422)',
      tag,
      permission: 'tenant:member:delete',
      returnsSensitive: [],
      params: idParams,
      responses: { 204: { description: 'Removed' } },
      async handle({ principal, params, requestId }) {
        const removed = await commands.remove(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(removed.position) };
      },
    }),
  ];
}
