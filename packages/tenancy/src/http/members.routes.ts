import { z } from 'zod';
import { defineRoute, pageQuery, paginated, repeatable, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { idParams, memberSchema, paginatedSchema, uuid } from '@tokenvault/contracts';
import { MemberCommands } from '../commands/members.commands.ts';
import type { MemberQueries } from '../queries/members.queries.ts';
import type { Clock } from '@tokenvault/platform';

export interface MemberRouteDeps {
  store: EventStore;
  consistency: ReadModelConsistency;
  clock: Clock;
  /** The process's member queries. */
  memberQueries: MemberQueries;
}

export function memberRoutes({
  store,
  consistency,
  clock,
  memberQueries,
}: MemberRouteDeps): RouteDefinition[] {
  const commands = new MemberCommands(store, clock);
  const queries = memberQueries;
  const tag = 'Tenant members';
  return [
    defineRoute({
      method: 'get',
      path: '/tenants/self/members',
      operationId: 'listMembers',
      summary: 'List the members of the tenant, with their users',
      tag,
      permission: 'tenant:member:read',
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
      params: idParams,
      responses: { 204: { description: 'Removed' } },
      async handle({ principal, params, requestId }) {
        const removed = await commands.remove(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(removed.position) };
      },
    }),
  ];
}
