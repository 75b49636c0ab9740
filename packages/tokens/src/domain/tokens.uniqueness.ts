import type { ClaimChanges } from '@tokenvault/eventstore';
import type { TokenEvent } from './tokens.events.ts';

/** One deduplicated token per data (its fingerprint), type and set of containers in a tenant. */
export const tokenDataScope = 'token-data';

export const tokenDataKey = (token: {
  tenant_id: string;
  type: string;
  containers: readonly string[];
  fingerprint: string;
}) => `${token.tenant_id}:${token.type}:${[...token.containers].sort().join(',')}:${token.fingerprint}`;

/** Token ids are the caller's, unique only within a tenant. */
export const tokenHolder = (tenantId: string, tokenId: string) => `${tenantId}/${tokenId}`;

/** The token id of a holder (tenant ids are uuids: the first slash ends them). */
export const tokenIdOfHolder = (holder: string) => holder.slice(holder.indexOf('/') + 1);

/**
 * What each token event claims and gives up: a token created or updated while its tenant
 * deduplicates claims its data, so a concurrent create of equal data is refused by its own append
 * (and answers with this token); an update or a delete gives the old claim up.
 */
export function tokenClaims(event: { type: string; data: unknown }): ClaimChanges | undefined {
  const typed = event as TokenEvent;
  switch (typed.type) {
    case 'TokenCreated': {
      if (!typed.data.deduplicated) return undefined;
      const holder = tokenHolder(typed.data.tenant_id, typed.data.token_id);
      const expired = typed.data.claim_taken_from;
      return {
        // An expired holder gives its claim up to the new token, in the same append.
        ...(expired
          ? { releaseHeldBy: [{ scope: tokenDataScope, holder: tokenHolder(typed.data.tenant_id, expired) }] }
          : {}),
        claim: [
          { scope: tokenDataScope, key: tokenDataKey(typed.data), holder, tenant_id: typed.data.tenant_id },
        ],
      };
    }
    case 'TokenUpdated': {
      if (!typed.data.data_claim) return undefined;
      const holder = tokenHolder(typed.data.tenant_id, typed.data.token_id);
      return {
        releaseHeldBy: [{ scope: tokenDataScope, holder }],
        ...(typed.data.data_claim === 'moved'
          ? {
              claim: [
                {
                  scope: tokenDataScope,
                  key: tokenDataKey(typed.data),
                  holder,
                  tenant_id: typed.data.tenant_id,
                },
              ],
            }
          : {}),
      };
    }
    case 'TokenDeleted':
      return {
        releaseHeldBy: [
          { scope: tokenDataScope, holder: tokenHolder(typed.data.tenant_id, typed.data.token_id) },
        ],
      };
    case 'TokenAssociated':
    case 'TokenDissociated':
    case 'TokenReencrypted':
    case 'TokenCvcRemoved':
      return undefined;
    default:
      // Another context's event (every event is asked).
      return undefined;
  }
}
