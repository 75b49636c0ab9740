import { randomUUID } from 'node:crypto';
import { createBlockingConnection } from '@tokenvault/jobs';
import type { Logger, Redis } from '@tokenvault/platform';

/**
 * What a worker sends back to the gateway process that queued a run: the run id and its outcome
 * sealed under the tenant's data key (never plaintext), or no outcome when the run could not be
 * carried out.
 */
export interface RunReply {
  run_id: string;
  sealed_outcome?: string;
}

/** Every reply list's name starts with this (a worker pushes onto no other key). */
export const replyListPrefix = (queuePrefix: string) => `${queuePrefix}:reactor-run:replies:`;

/** Replies a gateway has not taken within this time go with their list (the gateway is gone). */
const replyListTtlMs = 60_000;
/** Replies taken per round trip when several are waiting. */
const repliesPerRead = 100;
/** How long one read blocks; the loop reads again at once (it only bounds a dead connection). */
const blockSeconds = 5;
const retryDelayMs = 500;

/**
 * The gateway's side of run replies: one Redis list per gateway process, read by one blocking
 * connection, and the runs this process waits for. A worker pushes a run's reply onto the list its
 * job names (`reply_to`), so a waiting call needs no stream of every job's events and no polling.
 * A list, not a pub/sub channel: a reply pushed while the connection is down is still there after
 * it reconnects.
 */
export class RunReplies {
  /** The list this process reads: what a run's `reply_to` holds. */
  readonly key: string;
  private readonly connection: Redis;
  private readonly waiting = new Map<string, (reply: RunReply | undefined) => void>();
  private readonly logger: Logger;
  private closed = false;
  private readonly reading: Promise<void>;

  constructor(redisUrl: string, prefix: string, logger: Logger) {
    this.key = `${replyListPrefix(prefix)}${randomUUID()}`;
    this.logger = logger;
    this.connection = createBlockingConnection({ REDIS_URL: redisUrl });
    this.connection.on('error', (error) =>
      logger.warn({ err: error }, 'reactor run replies connection error'),
    );
    this.reading = this.read();
  }

  /**
   * The reply of this run, or undefined after `withinMs` (or when this closes). Call it before the
   * run can finish (before it is queued): a reply nobody waits for is dropped.
   */
  expect(runId: string, withinMs: number): Promise<RunReply | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(undefined), withinMs);
      timer.unref();
      const settle = (reply: RunReply | undefined) => {
        clearTimeout(timer);
        this.waiting.delete(runId);
        resolve(reply);
      };
      this.waiting.set(runId, settle);
    });
  }

  /** Stops waiting for this run (it was never queued): its `expect` resolves undefined. */
  cancel(runId: string): void {
    this.waiting.get(runId)?.(undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const settle of [...this.waiting.values()]) settle(undefined);
    // Ends the blocking read at once (a QUIT would wait for it).
    this.connection.disconnect();
    await this.reading;
  }

  private async read(): Promise<void> {
    while (!this.closed) {
      try {
        const popped = await this.connection.blmpop(
          blockSeconds,
          1,
          this.key,
          'RIGHT',
          'COUNT',
          repliesPerRead,
        );
        for (const message of popped?.[1] ?? []) this.deliver(message);
      } catch (error) {
        if (this.closed) return;
        this.logger.warn({ err: error }, 'reading reactor run replies failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
      }
    }
  }

  private deliver(message: string): void {
    let reply: RunReply;
    try {
      reply = JSON.parse(message) as RunReply;
    } catch {
      return;
    }
    // A reply that came after its caller stopped waiting (timed out) is dropped.
    this.waiting.get(reply.run_id)?.(reply);
  }
}

/** The worker's side: pushes a run's reply onto the list of the gateway that waits for it. */
export async function sendRunReply(redis: Redis, replyTo: string, reply: RunReply): Promise<void> {
  await redis.multi().lpush(replyTo, JSON.stringify(reply)).pexpire(replyTo, replyListTtlMs).exec();
}
