import { defineRoute, type RouteDefinition } from '@tokenvault/platform';
import { usageReportSchema } from '@tokenvault/contracts';
import { usageReport } from '../queries/usage.queries.ts';
import type { TokenRouteDeps } from './token-access.ts';

/** The tenant's token usage report. */
export function usageReportRoutes(deps: TokenRouteDeps): RouteDefinition[] {
  const { appPool, consistency, clock } = deps;
  return [
    defineRoute({
      method: 'get',
      path: '/tenants/self/reports/usage',
      operationId: 'getUsageReport',
      summary:
        'Token usage of the tenant: live tokens by type, tokens created per day and type, monthly active tokens',
      tag: 'Tenant',
      permission: 'report:read',
      returnsSensitive: [],
      responses: { 200: { description: 'The usage report', schema: usageReportSchema } },
      async handle({ principal }) {
        // Usage is written by the projector: it first catches up with every write made so far.
        const headers = await consistency.beforeTrailingRead();
        return {
          status: 200,
          headers,
          body: await usageReport(appPool, principal.tenantId, deps.includedMonthlyActiveTokens, clock.now()),
        };
      },
    }),
  ];
}
