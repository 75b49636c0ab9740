import { randomUUID } from 'node:crypto';
import type { Redis, TenantConcurrencyCap } from '@tokenvault/platform';

/**
 * Takes a slot if fewer than ARGV[1] live ones are held. Each slot is a member of a sorted set
 * scored by when it lapses, so a slot whose holder crashed frees itself (the safety net) without
 * waiting for the whole set to go quiet, as a plain INCR/DECR counter under one TTL would.
 */
const acquireScript = `
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/** A route's cap on calls in flight per tenant (its `tenantConcurrency`), across every gateway process. */
export class TenantConcurrency {
  private readonly redis: Redis;
  private readonly prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
  }

  /** A release function, or undefined when the tenant is at the cap. */
  async acquire(
    cap: Pick<TenantConcurrencyCap, 'name' | 'max' | 'slotTtlMs'>,
    tenantId: string,
  ): Promise<(() => Promise<void>) | undefined> {
    const key = `${this.prefix}:${cap.name}:${tenantId}`;
    const slot = randomUUID();
    const taken = await this.redis.eval(acquireScript, 1, key, String(cap.max), String(cap.slotTtlMs), slot);
    if (taken !== 1) return undefined;
    return async () => {
      await this.redis.zrem(key, slot).catch(() => undefined);
    };
  }
}
