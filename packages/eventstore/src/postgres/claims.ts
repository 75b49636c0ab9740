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

/**
 * The claims of a group-commit batch as one statement (none when nothing is claimed), or undefined
 * when one statement would not
 * do what the appends' own claim queries do one after another: when an append releases (a release
 * between two claims can free or take back what they contest), or when a key comes twice (the
 * second claimant must see the first). Keys are claimed in (scope, key) order, the order other
 * batches take them in. Raises ES002 naming the holder when a key has another; the caller then
 * sends the batch again append by append, to find whose claim it was.
 */
export function batchClaimQueries(
  changes: readonly (ClaimChanges | undefined)[],
): pg.QueryConfig[] | undefined {
  if (changes.some((change) => change?.releaseTenant || change?.releaseHeldBy?.length)) return undefined;
  const claims = changes.flatMap((change) => change?.claim ?? []);
  const keys = new Set(claims.map((claim) => JSON.stringify([claim.scope, claim.key])));
  if (keys.size !== claims.length) return undefined;
  if (claims.length === 0) return [];
  const query: pg.QueryConfig = {
    name: 'es_claim_batch_refusing',
    // As es_claim_refusing, for many rows: DO UPDATE (to itself) returns a conflicting row's holder.
    text: `WITH wanted AS (
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) AS w(scope, key, holder, tenant_id)
           ),
           claimed AS (
             INSERT INTO es_unique_claims AS c (scope, key, holder, tenant_id)
             SELECT scope, key, holder, tenant_id FROM wanted ORDER BY scope, key
             ON CONFLICT (scope, key) DO UPDATE SET holder = c.holder
             RETURNING c.scope, c.key, c.holder
           )
           SELECT claimed.holder FROM claimed JOIN wanted USING (scope, key)
           WHERE es_refuse_unless(claimed.holder = wanted.holder, '${refusals.claimTaken}', claimed.holder)`,
    values: [
      claims.map((claim) => claim.scope),
      claims.map((claim) => claim.key),
      claims.map((claim) => claim.holder),
      claims.map((claim) => claim.tenant_id ?? null),
    ],
  };
  return [query];
}
