import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createRedis,
  Problem,
  type GuardedCall,
  type HandlerResult,
  type RouteDefinition,
  type TenantConcurrencyCap,
} from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { createRouteGuard } from './index.ts';
import { RateLimiter } from './rate-limit.ts';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
afterAll(async () => {
  await redis.quit();
});

/** The guard with no rate limit and no Idempotency-Key in play: only a route's own cap. */
function guardOf() {
  const prefix = `route-guard-spec-${randomUUID()}`;
  return createRouteGuard(redis, {} as Vault, new RateLimiter(redis, { prefix, defaultPerMinute: 0 }), {
    QUEUE_PREFIX: prefix,
    MASTER_KEY: '',
    IDEMPOTENCY_TTL_SECONDS: 60,
    IDEMPOTENCY_LOCK_TTL_MS: 5_000,
  });
}

/** A call of a route (with or without a cap) by a principal of this tenant. */
const callOf = (tenantId: string, tenantConcurrency?: TenantConcurrencyCap): GuardedCall =>
  ({
    route: { method: 'get', path: '/things/:id', tenantConcurrency } as Partial<RouteDefinition>,
    req: { get: () => undefined },
    res: { setHeader: () => undefined },
    principal: { tenantId, actorId: randomUUID() },
  }) as unknown as GuardedCall;

/** A run that answers when told to. */
function heldRun(result: HandlerResult = { status: 200 }) {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  return { run: () => finished.then(() => result), finish };
}

const refusal = (guarded: Promise<unknown>) =>
  guarded.then(
    () => undefined,
    (error: unknown) => (error instanceof Problem ? { status: error.status, detail: error.detail } : error),
  );

describe('the route guard’s cap on calls in flight (a route’s tenantConcurrency)', () => {
  const cap: TenantConcurrencyCap = { name: 'things', max: 1, inFlight: 'thing calls', slotTtlMs: 60_000 };

  it('holds a slot while a call runs, refuses the tenant past the route’s max, and gives the slot back', async () => {
    const guard = guardOf();
    const tenant = randomUUID();
    const first = heldRun();
    const running = guard(callOf(tenant, cap), first.run);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await refusal(guard(callOf(tenant, cap), () => Promise.resolve({ status: 200 })))).toEqual({
      status: 429,
      detail: 'This tenant already has 1 thing calls in flight.',
    });
    // Another tenant, and a route without a cap, are not held back.
    expect(await guard(callOf(randomUUID(), cap), () => Promise.resolve({ status: 200 }))).toEqual({
      status: 200,
    });
    expect(await guard(callOf(tenant), () => Promise.resolve({ status: 200 }))).toEqual({ status: 200 });
    first.finish();
    await running;
    expect(await guard(callOf(tenant, cap), () => Promise.resolve({ status: 201 }))).toEqual({ status: 201 });
  });

  it('keeps the slot past the answer until what holdUntil returns has resolved', async () => {
    const guard = guardOf();
    const tenant = randomUUID();
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const seen: HandlerResult[] = [];
    const holding: TenantConcurrencyCap = {
      ...cap,
      holdUntil: (result) => {
        seen.push(result);
        return result.status === 202 ? settled : undefined;
      },
    };
    // An answer holdUntil does not hold for releases the slot as the call ends.
    await guard(callOf(tenant, holding), () => Promise.resolve({ status: 200 }));
    expect(await guard(callOf(tenant, holding), () => Promise.resolve({ status: 202 }))).toEqual({
      status: 202,
    });
    expect(seen).toEqual([{ status: 200 }, { status: 202 }]);
    expect(
      await refusal(guard(callOf(tenant, holding), () => Promise.resolve({ status: 200 }))),
    ).toMatchObject({
      status: 429,
    });
    settle();
    await settled;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await guard(callOf(tenant, holding), () => Promise.resolve({ status: 200 }))).toEqual({
      status: 200,
    });
  });
});
