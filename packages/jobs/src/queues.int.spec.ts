import { connect, createServer, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@tokenvault/platform';
import { closedPort, eventually } from '@tokenvault/platform/testing';
import {
  createQueue,
  createWorker,
  reactorRunQueueName,
  signInMailQueueName,
  webhookDeliveryQueueName,
} from './queues.ts';

/** Redis again on `port`: a TCP relay to the test's Redis. */
async function redisBackOn(port: number): Promise<Server> {
  const redis = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const relay = createServer((socket) => {
    const upstream = connect(Number(redis.port || 6379), redis.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
  return relay;
}

describe('BullMQ queues and workers while Redis is unreachable', () => {
  it('log the outage once between them, not once per reconnection attempt, and its end once', async () => {
    const lines: { msg: string; source?: string }[] = [];
    const logger = createLogger(
      'info',
      'test',
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString().split('\n').filter(Boolean))
            lines.push(JSON.parse(line) as { msg: string });
          done();
        },
      }),
    );
    const port = await closedPort();
    const config = { REDIS_URL: `redis://127.0.0.1:${port}`, QUEUE_PREFIX: 'tv-test-outage' };
    const workers = ([signInMailQueueName, webhookDeliveryQueueName] as const).map((name) =>
      createWorker(name, config, async () => undefined, { concurrency: 1 }, logger),
    );
    const queue = createQueue(reactorRunQueueName, config, logger);
    const errors = { count: 0 };
    for (const worker of workers) worker.on('error', () => errors.count++);
    queue.on('error', () => errors.count++);
    // Several reconnection attempts of each of their connections.
    await sleep(3_000);
    expect(errors.count).toBeGreaterThan(4);
    expect(lines.map((line) => line.msg)).toEqual([
      expect.stringMatching(/^Redis unreachable \(REDIS_URL\)/),
    ]);
    const relay = await redisBackOn(port);
    try {
      await eventually(async () => expect(lines).toHaveLength(2), 30_000);
      expect(lines[1]!.msg).toBe('Redis reachable again (REDIS_URL)');
      await Promise.all([...workers.map((worker) => worker.close()), queue.close()]);
      expect(lines).toHaveLength(2);
    } finally {
      relay.close();
    }
  });
});
