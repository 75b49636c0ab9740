import { defaultCommandAttempts, aggregateStream } from '@tokenvault/cqrs';
import type { EventStore, Position } from '@tokenvault/eventstore';
import { notFound, type Clock } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { tokenStream } from '../domain/tokens.events.ts';
import { StaleDataBasis, tokenDecider } from '../domain/token.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { tokenCommandHandler } from './token-handler.ts';

/**
 * Seals a live token's data under a new token key, for a key thought compromised: the append
 * (TokenReencrypted, carrying the new ciphertext) stores the new key and so destroys the old one
 * in its transaction; every process forgets the old unwrapped key at that commit. The events
 * before it keep ciphertext under the destroyed key: unreadable from then on.
 */
export async function reencryptToken(
  deps: { store: EventStore; vault: Vault; clock: Clock },
  tenantId: string,
  tokenId: string,
  actor: { actorId: string; correlationId: string },
): Promise<{ position: Position | null }> {
  const stream = tokenStream(tenantId, tokenId);
  const handle = tokenCommandHandler(deps.store);
  for (let attempt = 1; ; attempt++) {
    const { state } = await aggregateStream(deps.store, stream, tokenDecider);
    if (state.status !== 'live') throw notFound('No token with this id.');
    const basis = state.token.data_ciphertext;
    const data = await deps.vault.decrypt(tenantId, tokenId, basis);
    const sealed = await deps.vault.sealToken(tenantId, tokenId, data, {
      expiresAt: state.token.expires_at ?? null,
    });
    try {
      // The new key goes with the append (its side data), which replaces the old one with it.
      const outcome = await handle(
        {
          type: 'ReencryptToken',
          tenantId,
          tokenId,
          basis,
          data_ciphertext: sealed.ciphertext,
          actorId: actor.actorId,
          now: deps.clock.now().toISOString(),
        },
        { tenant_id: tenantId, actor_type: 'system', correlation_id: actor.correlationId },
        { sideData: tokenKeysSideData([sealed]) },
      );
      deps.vault.forgetToken(tenantId, tokenId);
      return { position: outcome.position };
    } catch (error) {
      // An update changed the data meanwhile: seal what it holds now.
      if (!(error instanceof StaleDataBasis) || attempt >= defaultCommandAttempts) throw error;
    }
  }
}
