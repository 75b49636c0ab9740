import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createRedis, type Redis } from '@tokenvault/platform';
import { replyListPrefix, RunReplies, sendRunReply } from './run-replies.ts';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `tv-test-replies-${randomUUID()}`;
const logger = createLogger('silent');

let worker: Redis;
let replies: RunReplies;

beforeAll(() => {
  worker = createRedis(redisUrl);
});

afterEach(async () => {
  await replies?.close();
});

afterAll(async () => {
  const keys = await worker.keys(`${prefix}:*`);
  if (keys.length > 0) await worker.del(...keys);
  await worker.quit();
});

describe('run replies (a gateway process’s reply list)', () => {
  it('hands each waiting run its own reply, pushed before or while the gateway reads', async () => {
    replies = new RunReplies(redisUrl, prefix, logger);
    expect(replies.key.startsWith(replyListPrefix(prefix))).toBe(true);
    const first = randomUUID();
    const second = randomUUID();
    const firstReply = replies.expect(first, 5_000);
    const secondReply = replies.expect(second, 5_000);
    await sendRunReply(worker, replies.key, { run_id: second, sealed_outcome: 'sealed-2' });
    await sendRunReply(worker, replies.key, { run_id: 'nobody-waits-for-this', sealed_outcome: 'x' });
    await sendRunReply(worker, replies.key, { run_id: first, sealed_outcome: 'sealed-1' });
    expect(await firstReply).toEqual({ run_id: first, sealed_outcome: 'sealed-1' });
    expect(await secondReply).toEqual({ run_id: second, sealed_outcome: 'sealed-2' });
    // Everything was taken off the list, the reply nobody waited for included.
    expect(await worker.llen(replies.key)).toBe(0);
  });

  it('answers undefined when no reply comes in time, when cancelled, and when closed', async () => {
    replies = new RunReplies(redisUrl, prefix, logger);
    const lapsed = replies.expect(randomUUID(), 50);
    const cancelledRun = randomUUID();
    const cancelled = replies.expect(cancelledRun, 5_000);
    const cut = replies.expect(randomUUID(), 5_000);
    replies.cancel(cancelledRun);
    expect(await lapsed).toBeUndefined();
    expect(await cancelled).toBeUndefined();
    await replies.close();
    expect(await cut).toBeUndefined();
    expect(await replies.expect(randomUUID(), 5_000)).toBeUndefined();
  });

  it('keeps a reply on the list only for a while when its gateway is gone', async () => {
    const key = `${replyListPrefix(prefix)}${randomUUID()}`;
    await sendRunReply(worker, key, { run_id: randomUUID() });
    const ttl = await worker.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});
