import { z } from 'zod';
import {
  conflict,
  defineRoute,
  forbidden,
  notFound,
  pageQuery,
  paginated,
  repeatable,
  type Pool,
  type Principal,
  type RouteDefinition,
} from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import {
  associationParams,
  createTokenBody,
  paginatedSchema,
  parentParams,
  tokenId,
  tokenParams,
  tokenSchema,
  tokenTypeSchema,
  usageReportSchema,
} from '@tokenvault/contracts';
import { ReadAuditor } from '../commands/read-audit.ts';
import { usageReport } from '../queries/usage.ts';
import { TokenCommands } from '../commands/tokens.ts';
import { allowedOnAll, allowedOnAny } from '../domain/access.ts';
import { TokenQueries, tokenFields, type TokenRow } from '../queries/tokens.ts';

export interface TokenRouteDeps {
  store: EventStore;
  appPool: Pool;
  vault: Vault;
  consistency: ReadModelConsistency;
  /** The plan's monthly active tokens, shown in the usage report. */
  includedMonthlyActiveTokens: number;
}

export function tokenRoutes(deps: TokenRouteDeps): RouteDefinition[] {
  const { store, appPool, vault, consistency } = deps;
  const queries = new TokenQueries(appPool);
  const commands = new TokenCommands(store, vault, queries, consistency, appPool);
  const readAuditor = new ReadAuditor(store);

  /** A live token of the caller's tenant on which the caller holds the permission, or 404/403. */
  const tokenFor = async (
    principal: Principal,
    id: string,
    permission: string,
    mode: 'any' | 'all' = 'any',
  ) => {
    const row = await queries.get(principal.tenantId, id);
    if (!row) throw notFound('No token with this id.');
    const allowed = mode === 'any' ? allowedOnAny : allowedOnAll;
    if (!allowed(principal, permission, row.containers)) {
      throw forbidden(`This API key lacks ${permission} on the containers of token ${id}.`);
    }
    return row;
  };

  /** Opens tokens for a reader; the reads are on record before the data leaves. */
  const withData = async (principal: Principal, rows: TokenRow[], requestId: string) => {
    const tokens = await Promise.all(
      rows.map(async (row) => ({
        ...tokenFields(row),
        data: await vault.decrypt(row.tenant_id, row.id, row.data_ciphertext),
      })),
    );
    await readAuditor.record(
      principal,
      rows.map((row) => ({ tokenId: row.id, type: row.type })),
      requestId,
    );
    return tokens;
  };
  const tag = 'Tokens';
  return [
    defineRoute({
      method: 'post',
      path: '/tokens',
      summary: 'Create a token (deduplicated when asked or when the tenant setting is on)',
      tag,
      permission: 'token:create',
      body: createTokenBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created; the response never echoes the data', schema: tokenSchema },
        200: { description: 'Deduplicated: an existing token with the same data', schema: tokenSchema },
      },
      async handle({ principal, body, requestId }) {
        const result = await commands.create(principal, body, requestId);
        if (!result.created) return { status: 200, body: result.token };
        return { status: 201, headers: await consistency.afterWrite(result.position), body: result.token };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tokens/:id',
      summary: 'Get a token with its data',
      tag,
      permission: 'token:read',
      params: tokenParams,
      responses: { 200: { description: 'The token', schema: tokenSchema } },
      async handle({ principal, params, requestId }) {
        const row = await tokenFor(principal, params.id, 'token:read');
        const [token] = await withData(principal, [row], requestId);
        return { status: 200, body: token };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tokens/:parent_id/children/:child_id',
      summary: 'Associate a token as a child of another (idempotent)',
      tag,
      permission: 'token:read',
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
      summary: 'Remove a parent/child association',
      tag,
      permission: 'token:delete',
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
      summary: 'Create a token as a child of another, in one event',
      tag,
      permission: 'token:create',
      params: parentParams,
      body: createTokenBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created, without data', schema: tokenSchema },
        200: {
          description: 'Deduplicated: an existing token, now a child of the parent',
          schema: tokenSchema,
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
      summary: 'List a token’s children with their data (only those the key may read)',
      tag,
      permission: 'token:read',
      params: parentParams,
      query: z.strictObject({
        id: repeatable(tokenId),
        type: repeatable(tokenTypeSchema),
        ...pageQuery(100),
      }),
      responses: { 200: { description: 'A page of child tokens', schema: paginatedSchema(tokenSchema) } },
      async handle({ principal, params, query, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:read');
        const readableUnder = principal.permissions.has('token:read')
          ? null
          : principal.rules
              .filter((rule) => rule.permissions.includes('token:read'))
              .map((rule) => rule.container);
        const { rows, total } = await queries.children(principal.tenantId, params.parent_id, {
          ids: query.id,
          types: query.type,
          readableUnder,
          page: query.page,
          size: query.size,
        });
        return {
          status: 200,
          body: paginated(await withData(principal, rows, requestId), query.page, query.size, total),
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/self/reports/usage',
      summary: 'Token usage of the tenant: live tokens by type and monthly active tokens',
      tag: 'Tenant',
      permission: 'report:read',
      responses: { 200: { description: 'The usage report', schema: usageReportSchema } },
      async handle({ principal }) {
        return {
          status: 200,
          body: await usageReport(appPool, principal.tenantId, deps.includedMonthlyActiveTokens),
        };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tokens/:id',
      summary: 'Delete a token',
      tag,
      permission: 'token:delete',
      params: tokenParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        // An expired token is gone for deletes too (404), like for reads.
        await tokenFor(principal, params.id, 'token:delete', 'all');
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
