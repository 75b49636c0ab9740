import { LruCache } from '@tokenvault/platform';
import type { ReactorResponse } from '@tokenvault/contracts';
import type { InvalidationListener } from '@tokenvault/cqrs';
import { principalsOfTenant } from '@tokenvault/tenancy';
import { reactorsOfTenant } from '../projections/reactors.projection.ts';
import type { ReactorQueries } from './reactors.queries.ts';

export interface ReactorDefinitionsOptions {
  /** Upper bound on how long a reactor is run as read without a look-up; 0 disables the cache. */
  ttlMs: number;
}

/** Formula code may be 50,000 characters: this bounds the cache's code to about 100 MB (UTF-16). */
const maxCachedReactors = 1_000;

/**
 * The reactors that invocations (and proxy stages) run, kept in memory by id: without it every
 * run reads its reactor, formula and application and decrypts the configuration again. A change
 * evicts the tenant's entries when its projection commits (every process hears it before any
 * waiter on that write wakes; this process at once for its own appends): a reactor or formula
 * updated or deleted (`reactorsOfTenant`), an application changed or deleted, which a reactor runs
 * as (`principalsOfTenant`), the tenant deleted. All go when a notification may have been missed.
 * Reactors that are not there are never cached.
 */
export class ReactorDefinitions {
  private readonly cache: LruCache<ReactorResponse>;
  /** A look-up that started before an eviction must not cache what it read. */
  private generation = 0;

  private readonly queries: Pick<ReactorQueries, 'get'>;

  constructor(
    queries: Pick<ReactorQueries, 'get'>,
    invalidations: { onInvalidation(listener: InvalidationListener): void },
    options: ReactorDefinitionsOptions,
  ) {
    this.queries = queries;
    this.cache = new LruCache({ maxEntries: maxCachedReactors, ttlMs: options.ttlMs });
    invalidations.onInvalidation((key) => {
      this.generation++;
      if (key === null) return this.cache.clear();
      const tenantId = tenantOfReactorInvalidation(key);
      if (tenantId) this.cache.deletePrefix(`${tenantId}/`);
    });
  }

  async get(tenantId: string, reactorId: string): Promise<ReactorResponse | undefined> {
    const key = `${tenantId}/${reactorId}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const generationAtLookUp = this.generation;
    const reactor = await this.queries.get(tenantId, reactorId);
    if (reactor && generationAtLookUp === this.generation) this.cache.set(key, reactor);
    return reactor;
  }
}

/** The tenant whose cached reactors an invalidation key makes stale, if it is one of those. */
function tenantOfReactorInvalidation(key: string): string | undefined {
  const tenantId = key.slice(key.indexOf(':') + 1);
  return key === reactorsOfTenant(tenantId) || key === principalsOfTenant(tenantId) ? tenantId : undefined;
}
