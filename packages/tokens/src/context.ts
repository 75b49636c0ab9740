import type { ContextManifest } from '@tokenvault/cqrs';
import type { Detokenizer } from './commands/detokenize.ts';
import { TokenIntentCommands } from './commands/token-intents.commands.ts';
import { tokenEventTypes } from './domain/tokens.events.ts';
import { tokenClaims } from './domain/tokens.uniqueness.ts';
import { bulkTokenRoutes } from './http/bulk.routes.ts';
import { childTokenRoutes } from './http/children.routes.ts';
import { tokenSearchRoutes } from './http/search.routes.ts';
import { tokenAccess, type TokenRouteDeps } from './http/token-access.ts';
import { tokenIntentRoutes } from './http/token-intents.routes.ts';
import { tokenResourceRoutes } from './http/tokens.routes.ts';
import { usageReportRoutes } from './http/usage.routes.ts';
import { tokensMigrations } from './migrations.ts';
import { externalTokenKeyHook, tokenKeyStore } from './projections/token-keys.projection.ts';
import { tokenIntentsProjection } from './projections/token-intents.projection.ts';
import { tokensProjection } from './projections/tokens.projection.ts';
import { tokenUsageProjection } from './projections/usage.projection.ts';

/** What the tokens context contributes to the service (the runtime lists it in contexts.ts). */
export interface TokensContextDeps extends TokenRouteDeps {
  /** The process's detokenizer (reactors' and the proxy's too): POST /detokenize opens tokens with it. */
  detokenizer: Pick<Detokenizer, 'openTokens'>;
}

export const tokensContext: ContextManifest<TokensContextDeps> = {
  name: 'tokens',
  migrations: tokensMigrations,
  projections: {
    consistent: [tokensProjection, tokenIntentsProjection],
    trailing: [tokenUsageProjection],
  },
  effects: { inline: [tokenKeyStore], external: [externalTokenKeyHook] },
  claims: tokenClaims,
  eventTypes: tokenEventTypes,
  // One file per resource; in this order in the OpenAPI document.
  routes: (deps) => {
    const access = tokenAccess(deps);
    return [
      ...tokenResourceRoutes(deps, access),
      ...tokenSearchRoutes(deps, access),
      ...bulkTokenRoutes({
        consistency: deps.consistency,
        commands: deps.tokenCommands,
        detokenizer: deps.detokenizer,
      }),
      ...childTokenRoutes(deps, access),
      ...usageReportRoutes(deps),
      ...tokenIntentRoutes({
        consistency: deps.consistency,
        commands: new TokenIntentCommands({
          store: deps.store,
          vault: deps.vault,
          clock: deps.clock,
          cardCvcTtlSeconds: deps.tokenCommands.cardCvcTtlSeconds,
        }),
      }),
    ];
  },
};
