import { describe, expect, it } from 'vitest';
import { LruCache } from './lru.ts';

describe('the LRU cache', () => {
  it('keeps at most maxEntries, dropping the least recently used', () => {
    const cache = new LruCache<number>({ maxEntries: 2, ttlMs: 1_000 });
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('agrees with a plain model of itself over many mixed operations', () => {
    let now = 0;
    const cache = new LruCache<number>({ maxEntries: 8, ttlMs: 50, now: () => now });
    // The model: entries in order of use, least recent first.
    let model: { key: string; value: number; expiresAt: number }[] = [];
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % below;
    };
    for (let step = 0; step < 20_000; step++) {
      now += random(3);
      const key = `${random(3) === 0 ? 't' : 'u'}/${random(20)}`;
      const operation = random(10);
      if (operation < 5) {
        const found = model.find((entry) => entry.key === key);
        model = model.filter((entry) => entry.key !== key);
        const live = found && found.expiresAt > now ? found : undefined;
        if (live) model.push(live);
        expect(cache.get(key)).toBe(live?.value);
      } else if (operation < 9) {
        model = model.filter((entry) => entry.key !== key);
        model.push({ key, value: step, expiresAt: now + 50 });
        if (model.length > 8) model.shift();
        cache.set(key, step);
      } else if (random(2) === 0) {
        model = model.filter((entry) => entry.key !== key);
        cache.delete(key);
      } else {
        model = model.filter((entry) => !entry.key.startsWith('t/'));
        cache.deletePrefix('t/');
      }
      expect(cache.size).toBe(model.length);
    }
  });

  it('forgets an entry after its TTL, and on delete', () => {
    let now = 0;
    const cache = new LruCache<number>({ maxEntries: 10, ttlMs: 100, now: () => now });
    cache.set('t/1', 1);
    cache.set('t/2', 2);
    cache.set('u/1', 3);
    now = 50;
    cache.delete('t/1');
    expect(cache.get('t/1')).toBeUndefined();
    cache.deletePrefix('t/');
    expect(cache.get('t/2')).toBeUndefined();
    expect(cache.get('u/1')).toBe(3);
    now = 200;
    expect(cache.get('u/1')).toBeUndefined();
  });
});
