import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedis } from '@tokenvault/platform';
import { TenantConcurrency } from './tenant-concurrency.ts';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
afterAll(async () => {
  await redis.quit();
});

describe('TenantConcurrency (a route’s cap on calls in flight per tenant)', () => {
  it('gives at most max slots per tenant and cap, and a released slot back', async () => {
    const inFlight = new TenantConcurrency(redis, `tenant-concurrency-spec-${randomUUID()}`);
    const cap = { name: 'invocations', max: 2, slotTtlMs: 60_000 };
    const tenant = randomUUID();
    const first = await inFlight.acquire(cap, tenant);
    const second = await inFlight.acquire(cap, tenant);
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(await inFlight.acquire(cap, tenant)).toBeUndefined();
    // Another tenant, and another cap of the same tenant, count apart.
    expect(await inFlight.acquire(cap, randomUUID())).toBeDefined();
    expect(await inFlight.acquire({ ...cap, name: 'other' }, tenant)).toBeDefined();
    await first!();
    expect(await inFlight.acquire(cap, tenant)).toBeDefined();
  });

  it('frees a slot whose holder never released it once it lapses', async () => {
    const inFlight = new TenantConcurrency(redis, `tenant-concurrency-spec-${randomUUID()}`);
    const cap = { name: 'invocations', max: 1, slotTtlMs: 100 };
    const tenant = randomUUID();
    expect(await inFlight.acquire(cap, tenant)).toBeDefined();
    expect(await inFlight.acquire(cap, tenant)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await inFlight.acquire(cap, tenant)).toBeDefined();
  });
});
