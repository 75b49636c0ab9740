import {
  systemClock,
  unauthorized,
  type Authenticate,
  type Clock,
  type ContainerRule,
  type Pool,
  type Principal,
} from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { principalsOfTenant } from '../projections/tenancy.projection.ts';
import { hashApiKey, looksLikeApiKey } from '../domain/api-key.ts';

interface PrincipalRow {
  tenant_id: string;
  application_id: string;
  permissions: string[];
  rules: ContainerRule[];
  settings: Record<string, string>;
  rate_limit: { requests_per_minute?: number } | null;
}

interface CachedPrincipal {
  principal: Principal;
  /** The cache's own lifetime, and never past the key's expiry. */
  expiresAt: number;
}

export interface AuthenticatorOptions {
  /** Upper bound on how long a resolved key is trusted without a look-up; 0 disables the cache. */
  cacheTtlMs: number;
  maxCachedKeys?: number;
  /** What a key's expiry is compared with (the service's clock). */
  clock?: Clock;
}

/**
 * Resolves SVC-API-KEY to its tenant, application and grants. Only the key's SHA-256 digest is
 * looked up (fixed length, indexed). Resolved keys are cached by digest; the projection that
 * changes or deletes an application or tenant invalidates that tenant's entries in the same
 * notification stream a write's response waits on, so a deleted key fails as soon as the DELETE
 * has answered. Unknown keys are never cached. A key past its `expires_at` is refused by the
 * look-up, and a cached one is never trusted past it.
 */
export function createAuthenticator(
  ownerPool: Pool,
  consistency: ReadModelConsistency,
  options: AuthenticatorOptions,
): Authenticate {
  const cache = new Map<string, CachedPrincipal>();
  const maxCachedKeys = options.maxCachedKeys ?? 10_000;
  const clock = options.clock ?? systemClock;
  // A look-up that started before an invalidation must not cache what it read.
  let generation = 0;
  consistency.onInvalidation((key) => {
    generation++;
    if (key === null) return cache.clear();
    for (const [digest, entry] of cache) {
      if (principalsOfTenant(entry.principal.tenantId) === key) cache.delete(digest);
    }
  });
  return async (apiKey) => {
    if (!apiKey || !looksLikeApiKey(apiKey)) throw unauthorized();
    const digest = hashApiKey(apiKey);
    const now = clock.now();
    const cached = cache.get(digest);
    if (cached && cached.expiresAt > now.getTime()) return cached.principal;
    const generationAtLookUp = generation;
    const { principal, keyExpiresAt } = await lookUp(ownerPool, digest, now);
    if (options.cacheTtlMs > 0 && generationAtLookUp === generation) {
      if (cache.size >= maxCachedKeys) cache.delete(cache.keys().next().value!);
      const expiresAt = Math.min(now.getTime() + options.cacheTtlMs, keyExpiresAt?.getTime() ?? Infinity);
      cache.set(digest, { principal, expiresAt });
    }
    return principal;
  };
}

const principalColumns =
  'a.tenant_id, a.id AS application_id, a.permissions, a.rules, a.rate_limit, t.settings';
const principalSource = 'FROM applications a JOIN tenants t ON t.id = a.tenant_id';

/** The principal of a key that exists and has not expired at `now`, and when the key expires. */
async function lookUp(
  ownerPool: Pool,
  digest: string,
  now: Date,
): Promise<{ principal: Principal; keyExpiresAt: Date | null }> {
  const result = await ownerPool.query<PrincipalRow & { key_expires_at: Date | null }>(
    `SELECT ${principalColumns}, k.expires_at AS key_expires_at ${principalSource}
       JOIN api_keys k ON k.tenant_id = a.tenant_id AND k.application_id = a.id
       WHERE k.key_hash = $1 AND (k.expires_at IS NULL OR k.expires_at > $2)`,
    [digest, now],
  );
  const row = result.rows[0];
  if (!row) throw unauthorized();
  const keyExpiresAt = row.key_expires_at;
  return {
    principal: { ...principalOf(row), ...(keyExpiresAt ? { keyExpiresAt: keyExpiresAt.toISOString() } : {}) },
    keyExpiresAt,
  };
}

/**
 * An application acting without its key (a reactor's `svc` client): its grants as they are now,
 * or undefined when it (or its tenant) is gone. Keys are stored hashed only, so this is the one
 * way to act as an application in-process.
 */
export async function principalOfApplication(
  ownerPool: Pool,
  tenantId: string,
  applicationId: string,
): Promise<Principal | undefined> {
  const result = await ownerPool.query<PrincipalRow>(
    `SELECT ${principalColumns} ${principalSource} WHERE a.tenant_id = $1 AND a.id = $2`,
    [tenantId, applicationId],
  );
  const row = result.rows[0];
  return row && principalOf(row);
}

function principalOf(row: PrincipalRow): Principal {
  return {
    tenantId: row.tenant_id,
    actorId: row.application_id,
    actorType: 'application',
    permissions: new Set(row.permissions),
    rules: row.rules,
    tenantSettings: row.settings,
    ...(row.rate_limit?.requests_per_minute === undefined
      ? {}
      : { rateLimitPerMinute: row.rate_limit.requests_per_minute }),
  };
}
