import { Redis } from 'ioredis';

export type { Redis };

/** Redis for commands (rate limits, caps, idempotency): BullMQ's connections are @tokenvault/jobs'. */
export function createRedis(url: string): Redis {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3, enableOfflineQueue: true });
}
