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

/** One token per value of a unique search index in a tenant (the value's blind index). */
export const tokenSearchIndexScope = 'token-search-index';

export const searchIndexKey = (tenantId: string, value: string) => `${tenantId}:${value}`;

const indexClaims = (tenantId: string, holder: string, values: readonly string[] | undefined) =>
  (values ?? []).map((value) => ({
    scope: tokenSearchIndexScope,
    key: searchIndexKey(tenantId, value),
    holder,
    tenant_id: tenantId,
  }));

/** Token ids are the caller's, unique only within a tenant. */
export const tokenHolder = (tenantId: string, tokenId: string) => `${tenantId}/${tokenId}`;

/** The token id of a holder (tenant ids are uuids: the first slash ends them). */
export const tokenIdOfHolder = (holder: string) => holder.slice(holder.indexOf('/') + 1);

/**
 * What each token event claims and gives up: a token created or updated while its tenant
 * deduplicates claims its data, so a concurrent create of equal data is refused by its own append
 * (and answers with this token); an update or a delete gives the old claim up, and so does a
 * field's removal whose recomputed fingerprint or unique index values differ.
 */
export function tokenClaims(event: { type: string; data: unknown }): ClaimChanges | undefined {
  const typed = event as TokenEvent;
  switch (typed.type) {
    case 'TokenCreated': {
      const holder = tokenHolder(typed.data.tenant_id, typed.data.token_id);
      const unique = indexClaims(typed.data.tenant_id, holder, typed.data.unique_index_values);
      if (!typed.data.deduplicated) return unique.length ? { claim: unique } : undefined;
      const expired = typed.data.claim_taken_from;
      return {
        // An expired holder gives its claim up to the new token, in the same append.
        ...(expired
          ? { releaseHeldBy: [{ scope: tokenDataScope, holder: tokenHolder(typed.data.tenant_id, expired) }] }
          : {}),
        claim: [
          { scope: tokenDataScope, key: tokenDataKey(typed.data), holder, tenant_id: typed.data.tenant_id },
          ...unique,
        ],
      };
    }
    case 'TokenUpdated': {
      if (!typed.data.data_claim && !typed.data.index_claims) return undefined;
      const holder = tokenHolder(typed.data.tenant_id, typed.data.token_id);
      const releaseHeldBy = [
        ...(typed.data.data_claim ? [{ scope: tokenDataScope, holder }] : []),
        ...(typed.data.index_claims ? [{ scope: tokenSearchIndexScope, holder }] : []),
      ];
      const claim = [
        ...(typed.data.data_claim === 'moved'
          ? [
              {
                scope: tokenDataScope,
                key: tokenDataKey(typed.data),
                holder,
                tenant_id: typed.data.tenant_id,
              },
            ]
          : []),
        ...(typed.data.index_claims
          ? indexClaims(typed.data.tenant_id, holder, typed.data.unique_index_values)
          : []),
      ];
      return { releaseHeldBy, ...(claim.length ? { claim } : {}) };
    }
    case 'TokenDeleted': {
      const holder = tokenHolder(typed.data.tenant_id, typed.data.token_id);
      return {
        releaseHeldBy: [
          { scope: tokenDataScope, holder },
          { scope: tokenSearchIndexScope, holder },
        ],
      };
    }
    case 'TokenCvcRemoved': {
      // What was derived from the removed field goes with it in the same append: the claim on
      // the old fingerprint, and the unique index values it no longer gives.
      const derived = typed.data.derived;
      if (!derived?.data_claim && !derived?.index_claims) return undefined;
      const holder = tokenHolder(typed.data.tenant_id, typed.data.token_id);
      const claim = derived.index_claims
        ? indexClaims(typed.data.tenant_id, holder, derived.unique_index_values)
        : [];
      return {
        releaseHeldBy: [
          ...(derived.data_claim ? [{ scope: tokenDataScope, holder }] : []),
          ...(derived.index_claims ? [{ scope: tokenSearchIndexScope, holder }] : []),
        ],
        ...(claim.length ? { claim } : {}),
      };
    }
    case 'TokenAssociated':
    case 'TokenDissociated':
    case 'TokenReencrypted':
      return undefined;
    default:
      // Another context's event (every event is asked).
      return undefined;
  }
}
