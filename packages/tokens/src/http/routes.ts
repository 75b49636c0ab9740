import type { RouteDefinition } from '@tokenvault/platform';
import { childTokenRoutes } from './children.ts';
import { tokenAccess, type TokenRouteDeps } from './token-access.ts';
import { tokenResourceRoutes } from './tokens.ts';
import { usageReportRoutes } from './usage.ts';

/** Every route of the tokens context, one file per resource; in this order in the OpenAPI document. */
export function tokenRoutes(deps: TokenRouteDeps): RouteDefinition[] {
  const access = tokenAccess(deps);
  return [
    ...tokenResourceRoutes(deps, access),
    ...childTokenRoutes(deps, access),
    ...usageReportRoutes(deps),
  ];
}
