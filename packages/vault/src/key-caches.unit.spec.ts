import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { secretKeyOf } from './crypto.ts';
import { TenantKeyCache, TokenKeyCache } from './key-caches.ts';
import type { TenantKeys } from './tenant-keys.ts';

const newKey = () => secretKeyOf(randomBytes(32));
const keysOf = (): TenantKeys => ({
  current: 1,
  dataKeys: new Map([[1, newKey()]]),
  fingerprintKey: newKey(),
  searchKey: newKey(),
});

describe('TenantKeyCache', () => {
  it('loads a tenant once, concurrent first uses sharing the load, until it is forgotten', async () => {
    const cache = new TenantKeyCache();
    const loads: string[] = [];
    const load = async (tenantId: string) => (loads.push(tenantId), keysOf());
    const [first, second] = await Promise.all([cache.get('t1', load), cache.get('t1', load)]);
    expect(second).toBe(first);
    expect(loads).toEqual(['t1']);
    cache.forget('t1');
    expect(await cache.get('t1', load)).not.toBe(first);
    expect(loads).toEqual(['t1', 't1']);
  });

  it('drops a load that failed, so the next use loads again', async () => {
    const cache = new TenantKeyCache();
    await expect(cache.get('t1', () => Promise.reject(new Error('no keys')))).rejects.toThrow('no keys');
    const keys = keysOf();
    expect(await cache.get('t1', async () => keys)).toBe(keys);
  });
});

describe('TokenKeyCache', () => {
  it("forgets a token's key, or a tenant's keys and none of a tenant whose id it begins", () => {
    const cache = new TokenKeyCache({ maxEntries: 10, ttlMs: 60_000 });
    const [a1, a2, ab1] = [newKey(), newKey(), newKey()];
    cache.keep('a', 'token-1', a1);
    cache.keep('a', 'token-2', a2);
    cache.keep('ab', 'token-1', ab1);
    cache.forgetToken('a', 'token-1');
    expect(cache.get('a', 'token-1')).toBeUndefined();
    expect(cache.get('a', 'token-2')).toBe(a2);
    cache.forgetTenant('a');
    expect(cache.get('a', 'token-2')).toBeUndefined();
    expect(cache.get('ab', 'token-1')).toBe(ab1);
    expect(cache.size).toBe(1);
  });
});
