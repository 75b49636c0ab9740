import type { KeyObject } from 'node:crypto';
import { LruCache } from '@tokenvault/platform';
import type { TenantKeys } from './tenant-keys.ts';

/**
 * Each tenant's keys, unwrapped once and kept for the life of the process (until forgotten): the
 * load in flight is kept, so concurrent first uses share one; a load that failed is dropped.
 */
export class TenantKeyCache {
  private readonly keys = new Map<string, Promise<TenantKeys>>();

  get(tenantId: string, load: (tenantId: string) => Promise<TenantKeys>): Promise<TenantKeys> {
    let keys = this.keys.get(tenantId);
    if (!keys) {
      keys = load(tenantId);
      this.keys.set(tenantId, keys);
      keys.catch(() => this.keys.delete(tenantId));
    }
    return keys;
  }

  forget(tenantId: string): void {
    this.keys.delete(tenantId);
  }

  clear(): void {
    this.keys.clear();
  }
}

/** Unwrapped token keys (LRU, with a time to live); a tenant's entries share its prefix. */
export class TokenKeyCache {
  private readonly keys: LruCache<KeyObject>;

  constructor(options: { maxEntries: number; ttlMs: number }) {
    this.keys = new LruCache(options);
  }

  get(tenantId: string, tokenId: string): KeyObject | undefined {
    return this.keys.get(entryOf(tenantId, tokenId));
  }

  keep(tenantId: string, tokenId: string, key: KeyObject): void {
    this.keys.set(entryOf(tenantId, tokenId), key);
  }

  forgetToken(tenantId: string, tokenId: string): void {
    this.keys.delete(entryOf(tenantId, tokenId));
  }

  forgetTenant(tenantId: string): void {
    this.keys.deletePrefix(entryOf(tenantId, ''));
  }

  clear(): void {
    this.keys.clear();
  }

  get size(): number {
    return this.keys.size;
  }
}

const entryOf = (tenantId: string, tokenId: string) => `${tenantId}/${tokenId}`;
