import { Redis } from 'ioredis';

export type { Redis };

export function createRedis(url: string, options: { forQueues?: boolean } = {}): Redis {
  // BullMQ's blocking connections need maxRetriesPerRequest: null.
  return new Redis(url, {
    lazyConnect: false,
    maxRetriesPerRequest: options.forQueues ? null : 3,
    enableOfflineQueue: true,
  });
}
