import type pg from 'pg';
import type { Queryable } from '@tokenvault/platform';
import { refusals } from './event-store-migrations.ts';
import { UniqueClaimTaken, type ClaimChanges } from '../port.ts';

/**
 * An event's claim changes as queries for the append's transaction: releases first (a holder may
 * move its claim to another key), then the claims. A claim of a key held by another holder raises
 * ES002 (see claimTakenFrom), which rolls the append back; a concurrent claim of the same key waits
 * for the other transaction and then finds it taken. No query depends on another's result, so
 * they can be pipelined with the append.
 */
export function claimChangeQueries(changes: ClaimChanges): pg.QueryConfig[] {
  return [
    ...claimReleaseQueries(changes),
    ...(changes.claim ?? []).map((claim) => ({
      // Its own name: node-postgres binds a statement name to one text per connection, and the
      // external store's settling claim (which must not raise) is a different text.
      name: 'es_claim_refusing',
      // DO UPDATE (to itself) returns the holder of a conflicting row, even one committed after
      // this statement began, which a plain SELECT here could not see.
      text: `WITH claimed AS (
               INSERT INTO es_unique_claims AS c (scope, key, holder, tenant_id) VALUES ($1, $2, $3, $4)
               ON CONFLICT (scope, key) DO UPDATE SET holder = c.holder RETURNING c.holder
             )
             SELECT holder FROM claimed WHERE es_refuse_unless(holder = $3, '${refusals.claimTaken}', holder)`,
      values: [claim.scope, claim.key, claim.holder, claim.tenant_id ?? null],
    })),
  ];
}

/** The releases of an event's claim changes: the tenant's claims, then those of each holder. */
export function claimReleaseQueries(changes: ClaimChanges): pg.QueryConfig[] {
  return [
    ...(changes.releaseTenant
      ? [
          {
            name: 'es_release_tenant_claims',
            text: 'DELETE FROM es_unique_claims WHERE tenant_id = $1',
            values: [changes.releaseTenant],
          },
        ]
      : []),
    ...(changes.releaseHeldBy ?? []).map((release) => ({
      name: 'es_release_claims',
      text: 'DELETE FROM es_unique_claims WHERE scope = $1 AND holder = $2',
      values: [release.scope, release.holder],
    })),
  ];
}

/** UniqueClaimTaken for an error of a claim query that refused (ES002), else undefined. */
export function claimTakenFrom(error: unknown, query: pg.QueryConfig): UniqueClaimTaken | undefined {
  const details = error as { code?: unknown; detail?: unknown } | null;
  if (details?.code !== refusals.claimTaken) return undefined;
  const [scope] = query.values as [string];
  return new UniqueClaimTaken(scope, typeof details.detail === 'string' ? details.detail : 'unknown');
}

/** The claim changes, one query after another, in the caller's transaction. */
export async function applyClaimChanges(db: Queryable, changes: ClaimChanges): Promise<void> {
  for (const query of claimChangeQueries(changes)) {
    try {
      await db.query(query);
    } catch (error) {
      throw claimTakenFrom(error, query) ?? error;
    }
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
