import { randomBytes } from 'node:crypto';
import { beforeAll } from 'vitest';
import type { Projection } from '@tokenvault/cqrs';
import { useReadSide, type ReadSide } from '@tokenvault/cqrs/testing';
import { systemClock, type Principal, type RouteDefinition } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { ReadAuditor } from '../commands/read-audit.ts';
import { TokenCommands } from '../commands/tokens.commands.ts';
import { tokenClaims } from '../domain/tokens.uniqueness.ts';
import type { TokenRouteDeps } from '../http/token-access.ts';
import { tokensMigrations } from '../migrations.ts';
import { tokensProjection } from '../projections/tokens.projection.ts';
import { TokenQueries } from '../queries/tokens.queries.ts';

type RouteApp = ReturnType<typeof routeApp>;

/**
 * Token routes in process, for a describe block (call it at its top level): commands on an
 * in-memory store, queries on PostgreSQL (useReadSide, with the tokens' data claims), the
 * `tenants`' data keys made, `routes` mounted with `callers` named by their SVC-API-KEY. The vault
 * has TOKEN_KEYS=off: tokens are sealed under the tenant's key, since a token's own key is stored
 * by an append to PostgreSQL, in its transaction, which the in-memory store does not make.
 * `api` answers once the block's beforeAll has run.
 */
export function tokenRouteApp(options: {
  tenants: readonly string[];
  callers: Readonly<Record<string, Principal>>;
  routes: (deps: TokenRouteDeps) => RouteDefinition[];
  projections?: readonly Projection[];
}): { side: Readonly<ReadSide>; api: Pick<RouteApp, 'get' | 'post' | 'patch' | 'delete'> } {
  const side = useReadSide(
    [...vaultMigrations, ...tokensMigrations],
    options.projections ?? [tokensProjection],
    {
      uniqueness: tokenClaims,
    },
  );
  let app: RouteApp | undefined;
  beforeAll(async () => {
    const { store, ownerPool, appPool, consistency } = side;
    const vault = new Vault(ownerPool, new LocalKeyring([['default', randomBytes(32).toString('base64')]]), {
      perTokenKeys: false,
    });
    // What creating a tenant gives it: its data keys.
    for (const tenantId of options.tenants) await vault.createTenantKeys(tenantId);
    const tokenQueries = new TokenQueries(appPool, systemClock);
    const deps: TokenRouteDeps = {
      store,
      appPool,
      vault,
      consistency,
      includedMonthlyActiveTokens: 1_000,
      clock: systemClock,
      tokenQueries,
      readAuditor: new ReadAuditor(store, systemClock),
      tokenCommands: new TokenCommands(store, vault, tokenQueries, systemClock),
    };
    app = routeApp(options.routes(deps), options.callers);
  });
  const built = () => {
    if (!app) throw new Error('tokenRouteApp: the routes are mounted in the describe block’s beforeAll');
    return app;
  };
  return {
    side,
    api: {
      get: (url) => built().get(url),
      post: (url) => built().post(url),
      patch: (url) => built().patch(url),
      delete: (url) => built().delete(url),
    },
  };
}
