import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from '@tokenvault/platform';
import { leaseMs, RateLimiter } from './rate-limit.ts';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
afterAll(async () => {
  await redis.quit();
});

/** A limiter of its own (what one gateway process has) on the shared Redis, counting its scripts. */
function processLimiter(prefix: string) {
  const counted = { scripts: 0 };
  const client = Object.create(redis) as Redis;
  client.eval = ((...args: Parameters<Redis['eval']>) => {
    counted.scripts++;
    return redis.eval(...args);
  }) as Redis['eval'];
  return { limiter: new RateLimiter(client, { prefix, defaultPerMinute: 0 }), counted };
}

const remaining = (headers: Record<string, string>) => Number(/;r=(\d+);/.exec(headers.ratelimit!)?.[1]);

describe('RateLimiter (leases of a GCRA in Redis)', () => {
  it('two processes on one key admit the quota, at most quota × lease ÷ window more, with one script per lease', async () => {
    const prefix = `rate-limit-spec-${randomUUID()}`;
    const processes = [processLimiter(prefix), processLimiter(prefix)];
    const quota = 6_000;
    const key = `rate-limit:${randomUUID()}`;
    let admitted = 0;
    const startedAt = performance.now();
    for (let round = 0; round < 400; round++) {
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          processes[index % 2]!.limiter.takeFrom(key, 'default', quota, 60),
        ),
      );
      admitted += outcomes.filter((outcome) => outcome.retryAfter === undefined).length;
    }
    const elapsedMs = performance.now() - startedAt;
    const refilled = Math.floor(elapsedMs / (60_000 / quota)) + 1;
    const bound = (quota * leaseMs) / 60_000;
    expect(admitted).toBeLessThanOrEqual(quota + refilled + bound);
    expect(admitted).toBeGreaterThanOrEqual(quota - 2 * bound);
    // 8,000 requests; leases of up to 100 requests, and refusals remembered until Retry-After.
    const scripts = processes[0]!.counted.scripts + processes[1]!.counted.scripts;
    expect(scripts).toBeLessThan(8_000 / 20);
  });

  it('counts a small quota exactly (a lease of one request), r falling by one, and refuses without Redis until Retry-After', async () => {
    const { limiter, counted } = processLimiter(`rate-limit-spec-${randomUUID()}`);
    const key = `rate-limit:${randomUUID()}`;
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await limiter.takeFrom(key, 'application', 3, 60);
      expect(outcome.retryAfter).toBeUndefined();
      expect(outcome.headers['ratelimit-policy']).toBe('"application";q=3;w=60');
      seen.push(remaining(outcome.headers));
    }
    expect(seen).toEqual([2, 1, 0]);
    expect(counted.scripts).toBe(3);
    const refused = await limiter.takeFrom(key, 'application', 3, 60);
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfter).toBeLessThanOrEqual(20);
    expect(remaining(refused.headers)).toBe(0);
    expect(counted.scripts).toBe(4);
    const again = await limiter.takeFrom(key, 'application', 3, 60);
    expect(again.retryAfter).toBeGreaterThanOrEqual(1);
    expect(counted.scripts).toBe(4);
  });

  it('answers r from its lease: one less per request admitted, the unused part counted as left', async () => {
    const { limiter } = processLimiter(`rate-limit-spec-${randomUUID()}`);
    const key = `rate-limit:${randomUUID()}`;
    const seen: number[] = [];
    const startedAt = performance.now();
    for (let i = 0; i < 40; i++)
      seen.push(remaining((await limiter.takeFrom(key, 'default', 6_000, 60)).headers));
    const refilled = Math.ceil((performance.now() - startedAt) / 10);
    // Each request takes one; the refill (one per 10 ms) may give some back, never take more.
    for (let i = 1; i < seen.length; i++) expect(seen[i - 1]! - seen[i]!).toBeLessThanOrEqual(1);
    expect(seen[0]).toBe(5_999);
    expect(seen.at(-1)).toBeLessThanOrEqual(5_999 - 39 + refilled);
  });
});
