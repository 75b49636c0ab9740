import { tooManyRequests, type Config, type Redis, type RouteGuard } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { Idempotency } from './idempotency.ts';
import { takeRateLimit, type RateLimiter } from './rate-limit.ts';
import { TenantConcurrency } from './tenant-concurrency.ts';

export { Idempotency, idempotencyHeaders, replayedHeader } from './idempotency.ts';
export { describeRouteGuard } from './openapi.ts';
export { RateLimiter, takeProxyRateLimit, takeRateLimit } from './rate-limit.ts';
export { TenantConcurrency } from './tenant-concurrency.ts';

const idempotentMethods = new Set(['post', 'put', 'patch']);

/**
 * What every API-key call passes through, in order: the key's rate limit (headers on every
 * answer, 429 past it), the route's cap on calls in flight per tenant (its `tenantConcurrency`),
 * then Idempotency-Key.
 */
export function createRouteGuard(
  redis: Redis,
  vault: Vault,
  limiter: RateLimiter,
  config: Pick<Config, 'QUEUE_PREFIX' | 'MASTER_KEY' | 'IDEMPOTENCY_TTL_SECONDS' | 'IDEMPOTENCY_LOCK_TTL_MS'>,
): RouteGuard {
  const prefix = config.QUEUE_PREFIX;
  const inFlight = new TenantConcurrency(redis, prefix);
  const idempotency = new Idempotency(redis, vault, {
    prefix,
    masterKey: config.MASTER_KEY,
    ttlSeconds: config.IDEMPOTENCY_TTL_SECONDS,
    lockTtlMs: config.IDEMPOTENCY_LOCK_TTL_MS,
  });
  return async (call, run) => {
    const { route, res, principal } = call;
    await takeRateLimit(limiter, principal, res);
    // After the rate limit, so that a malformed key's 400 carries the RateLimit headers too.
    const key = idempotentMethods.has(route.method) ? Idempotency.keyOf(call) : undefined;
    const cap = route.tenantConcurrency;
    let release: (() => Promise<void>) | undefined;
    if (cap) {
      release = await inFlight.acquire(cap, principal.tenantId);
      if (!release) {
        throw tooManyRequests(`This tenant already has ${cap.max} ${cap.inFlight} in flight.`, 1);
      }
    }
    try {
      const result = key === undefined ? await run() : await idempotency.run(call, key, run);
      // Work that goes on after the answer (an accepted async run) keeps the slot until it ends.
      const held = release;
      const until = held && cap?.holdUntil?.(result);
      if (held && until) {
        release = undefined;
        void until.finally(() => held());
      }
      return result;
    } finally {
      await release?.();
    }
  };
}
