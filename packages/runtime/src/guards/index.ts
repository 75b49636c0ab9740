import type { Config, Redis, RouteGuard } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { Idempotency } from './idempotency.ts';
import { takeRateLimit, tooManyRequests, type RateLimiter } from './rate-limit.ts';
import { TenantConcurrency } from './tenant-concurrency.ts';

export { Idempotency, idempotencyHeaders, replayedHeader } from './idempotency.ts';
export { describeRouteGuard } from './openapi.ts';
export { RateLimiter, takeProxyRateLimit, takeRateLimit } from './rate-limit.ts';
export { TenantConcurrency } from './tenant-concurrency.ts';

/** The routes whose calls count against REACTOR_MAX_CONCURRENT_PER_TENANT. */
const reactorInvocations = new Set(['post /reactors/:id/react', 'post /reactors/:id/react-async']);
const asyncInvocation = 'post /reactors/:id/react-async';

export interface RouteGuardOptions {
  /** Resolves when an async reactor run has finished (or after withinMs): its slot is held till then. */
  runSettled?: (runId: string, withinMs: number) => Promise<void>;
}

const idempotentMethods = new Set(['post', 'put', 'patch']);

/**
 * What every API-key call passes through, in order: the key's rate limit (headers on every
 * answer, 429 past it), the tenant's reactor concurrency cap, then Idempotency-Key.
 */
export function createRouteGuard(
  redis: Redis,
  vault: Vault,
  limiter: RateLimiter,
  config: Pick<
    Config,
    | 'QUEUE_PREFIX'
    | 'MASTER_KEY'
    | 'IDEMPOTENCY_TTL_SECONDS'
    | 'IDEMPOTENCY_LOCK_TTL_MS'
    | 'REACTOR_MAX_CONCURRENT_PER_TENANT'
    | 'REACTOR_TIMEOUT_MS'
  >,
  options: RouteGuardOptions = {},
): RouteGuard {
  const prefix = config.QUEUE_PREFIX;
  // Past the longest a sync invocation can take (the reactor timeout plus the queue's grace).
  const slotTtlMs = 2 * config.REACTOR_TIMEOUT_MS + 30_000;
  const reactors = new TenantConcurrency(redis, {
    prefix,
    name: 'reactor-invocations',
    max: config.REACTOR_MAX_CONCURRENT_PER_TENANT,
    slotTtlMs,
  });
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
    let release: (() => Promise<void>) | undefined;
    if (reactorInvocations.has(`${route.method} ${route.path}`)) {
      release = await reactors.acquire(principal.tenantId);
      if (!release) {
        throw tooManyRequests(
          `This tenant already has ${config.REACTOR_MAX_CONCURRENT_PER_TENANT} reactor invocations in flight.`,
          1,
        );
      }
    }
    try {
      const result = key === undefined ? await run() : await idempotency.run(call, key, run);
      // An accepted async run keeps its slot until it finishes (or the slot lapses).
      const runId = (result.body as { async_reactor_request_id?: unknown } | undefined)
        ?.async_reactor_request_id;
      const held = release;
      if (
        held &&
        options.runSettled &&
        `${route.method} ${route.path}` === asyncInvocation &&
        result.status === 202 &&
        typeof runId === 'string'
      ) {
        release = undefined;
        void options.runSettled(runId, slotTtlMs).finally(() => held());
      }
      return result;
    } finally {
      await release?.();
    }
  };
}
