import { aggregateStream, commandContext, type CommandHandler } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Clock, Principal } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { tokenDecider, type TokenCommand, type TokenState, type TokenView } from '../domain/token.ts';
import { tokenStream, type TokenEvent } from '../domain/tokens.events.ts';
import type { TokenQueries } from '../queries/tokens.queries.ts';

// What every token command shares: its collaborators, the caller's context, the token as its
// stream has it now.

/** What the token commands use of the vault: sealing, fingerprints, and the token keys it holds in memory. */
export type TokenCommandsVault = Pick<
  Vault,
  'sealToken' | 'keepTokenKey' | 'fingerprint' | 'searchIndex' | 'decrypt' | 'forgetToken'
>;

export interface TokenCommandDeps {
  store: EventStore;
  vault: TokenCommandsVault;
  queries: Pick<TokenQueries, 'findByFingerprint' | 'childIds'>;
  clock: Clock;
  /** How long a card keeps its CVC (CARD_CVC_TTL_SECONDS). */
  cardCvcTtlSeconds: number;
  /** The token aggregate's command handler on `store`. */
  handle: CommandHandler<TokenState, TokenCommand, TokenEvent>;
}

/** The caller's command context, with the grants a token command is checked against. */
export function tokenCommandContext(principal: Principal, correlationId: string, clock: Clock) {
  const { acting, metadata } = commandContext(principal, correlationId, clock);
  return { acting: { ...acting, grants: principal }, metadata };
}

/** A live token (not deleted, not expired) as its stream has it now. */
export async function liveToken(
  deps: Pick<TokenCommandDeps, 'store' | 'clock'>,
  tenantId: string,
  tokenId: string,
): Promise<TokenView | undefined> {
  const { state } = await aggregateStream(deps.store, tokenStream(tenantId, tokenId), tokenDecider);
  if (state.status !== 'live') return undefined;
  const expiresAt = state.token.expires_at;
  return expiresAt && Date.parse(expiresAt) <= deps.clock.now().getTime() ? undefined : state.token;
}
