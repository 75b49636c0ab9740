import type { ContextManifest } from '@tokenvault/cqrs';
import { tokenEventTypes } from './domain/events.ts';
import { tokenClaims } from './domain/uniqueness.ts';
import { tokenRoutes } from './http/routes.ts';
import type { TokenRouteDeps } from './http/token-access.ts';
import { tokensMigrations } from './migrations.ts';
import { externalTokenKeyHook, tokenKeyStore } from './projections/token-keys.ts';
import { tokensProjection } from './projections/tokens.ts';
import { tokenUsageProjection } from './projections/usage.ts';

/** What the tokens context contributes to the service (the runtime lists it in contexts.ts). */
export const tokensContext: ContextManifest<TokenRouteDeps> = {
  name: 'tokens',
  migrations: tokensMigrations,
  projections: { consistent: [tokensProjection], trailing: [tokenUsageProjection] },
  effects: { inline: [tokenKeyStore], external: [externalTokenKeyHook] },
  claims: tokenClaims,
  eventTypes: tokenEventTypes,
  routes: (deps) => tokenRoutes(deps),
};
