import {
  unauthorized,
  type Authenticate,
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
  expiresAt: number;
}

export interface AuthenticatorOptions {
  /** Upper bound on how long a resolved key is trusted without a look-up; 0 disables the cache. */
  cacheTtlMs: number;
  maxCachedKeys?: number;
}

/**
 * Resolves SVC-API-KEY to its tenant, application and grants. Only the key's SHA-256 digest is
 * looked up (fixed length, indexed). Resolved keys are cached by digest; the projection that
 * changes or deletes an application or tenant invalidates that tenant's entries in the same
 * notification stream a write's response waits on, so a deleted key fails as soon as the DELETE
 * has answered. Unknown keys are never cached.
 */
export function createAuthenticator(
  ownerPool: Pool,
  consistency: ReadModelConsistency,
  options: AuthenticatorOptions,
): Authenticate {
  const cache = new Map<string, CachedPrincipal>();
  const maxCachedKeys = options.maxCachedKeys ?? 10_000;
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
    const cached = cache.get(digest);
    if (cached && cached.expiresAt > Date.now()) return cached.principal;
    const generationAtLookUp = generation;
    const principal = await lookUp(ownerPool, digest);
    if (options.cacheTtlMs > 0 && generationAtLookUp === generation) {
      if (cache.size >= maxCachedKeys) cache.delete(cache.keys().next().value!);
      cache.set(digest, { principal, expiresAt: Date.now() + options.cacheTtlMs });
    }
    return principal;
  };
}

const principalQuery = `SELECT a.tenant_id, a.id AS application_id, a.permissions, a.rules, a.rate_limit, t.settings
       FROM applications a JOIN tenants t ON t.id = a.tenant_id`;

async function lookUp(ownerPool: Pool, digest: string): Promise<Principal> {
  const result = await ownerPool.query<PrincipalRow>(
    `${principalQuery}
       JOIN api_keys k ON k.tenant_id = a.tenant_id AND k.application_id = a.id
       WHERE k.key_hash = $1`,
    [digest],
  );
  const row = result.rows[0];
  if (!row) throw unauthorized();
  return principalOf(row);
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
    `${principalQuery} WHERE a.tenant_id = $1 AND a.id = $2`,
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
