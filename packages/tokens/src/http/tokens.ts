import { defineRoute, forbidden, notFound, type Pool, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import { createTokenBody, tokenParams, tokenSchema, usageReportSchema } from '@tokenvault/contracts';
import { ReadAuditor } from '../commands/read-audit.ts';
import { usageReport } from '../queries/usage.ts';
import { TokenCommands } from '../commands/tokens.ts';
import { allowedOnAny } from '../domain/access.ts';
import { TokenQueries, tokenFields } from '../queries/tokens.ts';

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
  const commands = new TokenCommands(store, vault, queries);
  const readAuditor = new ReadAuditor(store);
  const tag = 'Tokens';
  return [
    defineRoute({
      method: 'post',
      path: '/tokens',
      summary: 'Create a token (deduplicated when asked or when the tenant setting is on)',
      tag,
      permission: 'token:create',
      body: createTokenBody,
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
        const row = await queries.get(principal.tenantId, params.id);
        if (!row) throw notFound('No token with this id.');
        if (!allowedOnAny(principal, 'token:read', row.containers)) {
          throw forbidden('This API key lacks token:read on the token’s containers.');
        }
        const data = await vault.decrypt(row.tenant_id, row.id, row.data_ciphertext);
        // The read is on record before the data leaves.
        await readAuditor.record(principal, [{ tokenId: row.id, type: row.type }], requestId);
        return { status: 200, body: { ...tokenFields(row), data } };
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
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
