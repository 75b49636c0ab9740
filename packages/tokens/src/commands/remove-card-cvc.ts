import { defaultCommandAttempts } from '@tokenvault/cqrs';
import { UniqueClaimTaken, type EventStore, type Position } from '@tokenvault/eventstore';
import type { Clock } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { StaleDataBasis } from '../domain/token.ts';
import { withoutCvc } from '../domain/token-details.ts';
import { tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { recomputeFromData } from './field-removal.ts';
import { liveToken } from './token-command-kit.ts';
import { tokenCommandHandler } from './token-handler.ts';

export interface CardCvcRemovalDeps {
  store: EventStore;
  vault: Pick<Vault, 'decrypt' | 'sealToken' | 'forgetToken' | 'fingerprint' | 'searchIndex'>;
  clock: Clock;
  /**
   * Seal the data without its CVC under a new token key, which destroys the one that sealed the
   * CVC in every earlier event (PostgreSQL event store). An external event store cannot replace a
   * token's key (token-keys.projection.ts): there the token's key seals it, and the earlier
   * events keep the CVC sealed until the token is deleted (docs/token-types.md).
   */
  freshKey: boolean;
}

/**
 * `removed`; or nothing to do: the token is gone (deleted, expired), holds no CVC any more, or
 * holds a newer one whose own time is still to come (`renewed`).
 */
export type CardCvcRemovalOutcome = 'removed' | 'gone' | 'no-cvc' | 'renewed';

/** A CVC's removal ran before its time (clocks apart): the job is retried. */
export class CvcNotDueYet extends Error {
  constructor() {
    super('the CVC is not due for removal yet');
  }
}

/**
 * Removes a card's CVC once its time (`cvcExpiresAt`, as the event that gave it said) has come:
 * opens the data, seals it again without `cvc`, recomputes from it what the token derives from
 * its data (search index values and claims, fingerprint, summaries: field-removal.ts) and appends
 * TokenCvcRemoved with them, so that nothing computed from the CVC outlives it. Metadata,
 * containers, privacy and mask do not change. Safe to run again: a job retried, a token deleted
 * or updated since, each ends in an outcome without an append.
 */
export async function removeCardCvc(
  deps: CardCvcRemovalDeps,
  job: { tenantId: string; tokenId: string; cvcExpiresAt: string },
  correlationId: string,
): Promise<{ outcome: CardCvcRemovalOutcome; position: Position | null }> {
  const { tenantId, tokenId } = job;
  const handle = tokenCommandHandler(deps.store);
  // Set once another token holds a unique value the data left gives: claim only those held.
  let onlyHeldClaims = false;
  for (let attempt = 1; ; attempt++) {
    const token = await liveToken(deps, tenantId, tokenId);
    if (!token) return { outcome: 'gone', position: null };
    if (!token.cvc_expires_at) return { outcome: 'no-cvc', position: null };
    const now = deps.clock.now();
    if (Date.parse(token.cvc_expires_at) > now.getTime()) {
      if (token.cvc_expires_at !== job.cvcExpiresAt) return { outcome: 'renewed', position: null };
      throw new CvcNotDueYet();
    }
    const basis = token.data_ciphertext;
    const data = withoutCvc(await deps.vault.decrypt(tenantId, tokenId, basis));
    const derived = await recomputeFromData(
      deps.vault,
      token,
      data,
      onlyHeldClaims ? (token.unique_index_values ?? []) : undefined,
    );
    const sealed = await deps.vault.sealToken(
      tenantId,
      tokenId,
      data,
      deps.freshKey ? { expiresAt: token.expires_at ?? null } : { reuseKeyOf: basis },
    );
    try {
      const outcome = await handle(
        {
          type: 'RemoveCvc',
          tenantId,
          tokenId,
          basis,
          data_ciphertext: sealed.ciphertext,
          derived,
          now: now.toISOString(),
        },
        { tenant_id: tenantId, actor_type: 'system', correlation_id: correlationId },
        { sideData: tokenKeysSideData([sealed]) },
      );
      if (outcome.position === null) return { outcome: 'no-cvc', position: null };
      // The replaced key goes from this process's memory (the others hear of it at the commit).
      if (sealed.newKey) deps.vault.forgetToken(tenantId, tokenId);
      return { outcome: 'removed', position: outcome.position };
    } catch (error) {
      if (attempt >= defaultCommandAttempts) throw error;
      // Another token holds a unique value the data left gives: the removal keeps only the
      // claims the token had (it must go through), and that value is not claimed.
      if (error instanceof UniqueClaimTaken && error.scope === tokenSearchIndexScope && !onlyHeldClaims) {
        onlyHeldClaims = true;
        continue;
      }
      // An update changed the data meanwhile: remove the CVC from what it holds now.
      if (!(error instanceof StaleDataBasis)) throw error;
    }
  }
}
