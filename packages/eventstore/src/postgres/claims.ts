import type { Queryable } from '@tokenvault/platform';
import { UniqueClaimTaken, type ClaimChanges } from '../port.ts';

/**
 * Applies an event's claim changes inside the append's transaction: releases first (a holder may
 * move its claim to another key), then the claims. A key held by another holder throws
 * UniqueClaimTaken, which rolls the append back; a concurrent claim of the same key waits here
 * for the other transaction and then finds it taken.
 */
export async function applyClaimChanges(db: Queryable, changes: ClaimChanges): Promise<void> {
  if (changes.releaseTenant) {
    await db.query({
      name: 'es_release_tenant_claims',
      text: 'DELETE FROM es_unique_claims WHERE tenant_id = $1',
      values: [changes.releaseTenant],
    });
  }
  for (const release of changes.releaseHeldBy ?? []) {
    await db.query({
      name: 'es_release_claims',
      text: 'DELETE FROM es_unique_claims WHERE scope = $1 AND holder = $2',
      values: [release.scope, release.holder],
    });
  }
  for (const claim of changes.claim ?? []) {
    const { rows } = await db.query<{ holder: string }>({
      name: 'es_claim',
      // DO UPDATE (to itself) returns the holder of a conflicting row, even one committed after
      // this statement began, which a plain SELECT here could not see.
      text: `INSERT INTO es_unique_claims AS c (scope, key, holder, tenant_id) VALUES ($1, $2, $3, $4)
             ON CONFLICT (scope, key) DO UPDATE SET holder = c.holder RETURNING c.holder`,
      values: [claim.scope, claim.key, claim.holder, claim.tenant_id ?? null],
    });
    const holder = rows[0]?.holder;
    if (holder !== claim.holder) throw new UniqueClaimTaken(claim.scope, holder ?? 'unknown');
  }
}

export async function readClaimHolder(
  db: Queryable,
  scope: string,
  key: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ holder: string }>({
    name: 'es_claim_holder',
    text: 'SELECT holder FROM es_unique_claims WHERE scope = $1 AND key = $2',
    values: [scope, key],
  });
  return rows[0]?.holder;
}
