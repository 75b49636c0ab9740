import { z } from 'zod';
import {
  conflict,
  defineRoute,
  pageQuery,
  paginated,
  repeatable,
  type RouteDefinition,
} from '@tokenvault/platform';
import {
  associationParams,
  createTokenBody,
  paginatedSchema,
  parentParams,
  tokenId,
  tokenSchema,
  writtenTokenSchema,
  tokenTypeSchema,
} from '@tokenvault/contracts';
import { readTransform } from '../domain/access.ts';
import { readTargetOf } from '../queries/tokens.queries.ts';
import { checkTokenAccess, readableUnder, type TokenAccess, type TokenRouteDeps } from './token-access.ts';

/** A token's children: associate and dissociate, create a child, list them. */
export function childTokenRoutes(
  { consistency }: TokenRouteDeps,
  { queries, commands, tokenFor, withData }: TokenAccess,
): RouteDefinition[] {
  const tag = 'Tokens';
  return [
    defineRoute({
      method: 'post',
      path: '/tokens/:parent_id/children/:child_id',
      operationId: 'associateChildToken',
      summary: 'Associate a token as a child of another (idempotent)',
      tag,
      permission: 'token:read',
      returnsSensitive: [],
      params: associationParams,
      responses: { 204: { description: 'Associated (or already was)' } },
      async handle({ principal, params, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:read');
        await tokenFor(principal, params.child_id, 'token:read');
        const associated = await commands.associate(principal, params.parent_id, params.child_id, requestId);
        return { status: 204, headers: await consistency.afterWrite(associated.position) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tokens/:parent_id/children/:child_id',
      operationId: 'dissociateChildToken',
      summary: 'Remove a parent/child association',
      tag,
      permission: 'token:delete',
      returnsSensitive: [],
      params: associationParams,
      responses: { 204: { description: 'Removed' } },
      async handle({ principal, params, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:delete', 'all');
        await tokenFor(principal, params.child_id, 'token:delete', 'all');
        const dissociated = await commands.dissociate(
          principal,
          params.parent_id,
          params.child_id,
          requestId,
        );
        return { status: 204, headers: await consistency.afterWrite(dissociated.position) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tokens/:parent_id/children',
      operationId: 'createChildToken',
      summary: 'Create a token as a child of another, in one event',
      tag,
      permission: 'token:create',
      // Its answer carries the token's summaries and fingerprint: kept without them.
      returnsSensitive: ['token-summary'],
      params: parentParams,
      body: createTokenBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created, without data', schema: writtenTokenSchema },
        200: {
          description: 'Deduplicated: an existing token, now a child of the parent',
          schema: writtenTokenSchema,
        },
      },
      async handle({ principal, params, body, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:read');
        const result = await commands.create(principal, body, requestId, params.parent_id);
        if (result.created) {
          return { status: 201, headers: await consistency.afterWrite(result.position), body: result.token };
        }
        if (result.token.id === params.parent_id) {
          throw conflict('The data equals the parent’s own: a token cannot be its own child.');
        }
        const associated = await commands.associate(principal, params.parent_id, result.token.id, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(associated.position),
          body: result.token,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tokens/:parent_id/children',
      operationId: 'listChildTokens',
      summary: 'List a token’s children with their data (only those the key may read)',
      tag,
      permission: 'token:read',
      returnsSensitive: ['token-data'],
      params: parentParams,
      query: z.strictObject({
        id: repeatable(tokenId),
        type: repeatable(tokenTypeSchema),
        ...pageQuery(100),
      }),
      responses: { 200: { description: 'A page of child tokens', schema: paginatedSchema(tokenSchema) } },
      async handle({ principal, params, query, requestId }) {
        const readable = readableUnder(principal);
        if (readable !== null) {
          // A key with rules: its SQL filter (the containers of its rules, and the higher impact
          // levels a restriction policy reads) is wider than its read decision, so the page and
          // the total are counted over the children the decision gives access to, one by one.
          const targets = await queries.childTargets(principal.tenantId, params.parent_id, {
            ids: query.id,
            types: query.type,
            readableUnder: readable,
          });
          checkTokenAccess(principal, params.parent_id, targets?.parent, 'token:read');
          const readableIds = targets.children
            .filter((child) => readTransform(principal, 'token:read', readTargetOf(child)) !== undefined)
            .map((child) => child.id);
          const pageIds = readableIds.slice((query.page - 1) * query.size, query.page * query.size);
          const byId = new Map(
            (await queries.getMany(principal.tenantId, pageIds)).map((row) => [row.id, row] as const),
          );
          const rows = pageIds.flatMap((id) => byId.get(id) ?? []);
          return {
            status: 200,
            body: paginated(
              await withData(principal, rows, requestId),
              query.page,
              query.size,
              readableIds.length,
            ),
          };
        }
        // The parent comes with the page (one query); nothing is opened before it is checked.
        const page = await queries.children(principal.tenantId, params.parent_id, {
          ids: query.id,
          types: query.type,
          readableUnder: readable,
          page: query.page,
          size: query.size,
        });
        checkTokenAccess(principal, params.parent_id, page?.parent, 'token:read');
        return {
          status: 200,
          body: paginated(
            await withData(principal, page.rows, requestId),
            query.page,
            query.size,
            page.total,
          ),
        };
      },
    }),
  ];
}
