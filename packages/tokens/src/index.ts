export { tokensContext } from './context.ts';
export { tokensMigrations } from './migrations.ts';
export { tokensProjection } from './projections/tokens.projection.ts';
export { tokenUsageProjection } from './projections/usage.projection.ts';
export { tokenDecider } from './domain/token.ts';
export {
  tokenEventTypes,
  tokenReadsStream,
  tokenStream,
  type TokenEvent,
  type TokenReadEvent,
  type TokensReadEvent,
  type TokensReadBatchEvent,
  type TokensContextEvent,
} from './domain/tokens.events.ts';
export { allowedOnAll, allowedOnAny } from './domain/access.ts';
export { Detokenizer, type DetokenizerDeps } from './commands/detokenize.ts';
export { ReadAuditor } from './commands/read-audit.ts';
export { TokenCommands } from './commands/tokens.commands.ts';
export { TokenQueries } from './queries/tokens.queries.ts';
export type { TokenRouteDeps } from './http/token-access.ts';
export { tokenClaims } from './domain/tokens.uniqueness.ts';
export {
  externalTokenKeyHook,
  tokenKeyStore,
  tokenKeysSideData,
} from './projections/token-keys.projection.ts';
export { reencryptToken } from './commands/reencrypt.ts';
export { startTokenIntentSweeper, sweepExpiredTokenIntents } from './token-intent-sweep.ts';
export { startTokenKeySweeper, sweepExpiredTokenKeys, sweepOrphanTokenKeys } from './token-key-sweep.ts';
export { startCardCvcRemoval, cardCvcRemovalEnqueuerName } from './card-cvc-removal.ts';
export { removeCardCvc, type CardCvcRemovalOutcome } from './commands/remove-card-cvc.ts';
