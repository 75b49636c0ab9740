import { createQueue, type QueueName, type Queue } from '@tokenvault/jobs';
import type { EventStore, RecordedEvent } from '@tokenvault/eventstore';
import { EventProcessor } from '@tokenvault/cqrs';
import type { Logger, Pool } from '@tokenvault/platform';
import type { MailConfig, MailWorker } from './mail-worker.ts';

const day = 24 * 3600;

/**
 * An e-mail queue: retried with exponential backoff, and each job kept a while after it ends so
 * that a replayed enqueue is still a duplicate.
 */
export function createMailQueue<Data>(
  name: QueueName,
  config: MailConfig,
  logger: Logger,
  kept: { daysAfterSuccess: number; daysAfterFailure: number },
): Queue<Data> {
  return createQueue<Data>(name, config, logger, {
    attempts: config.EMAIL_ATTEMPTS,
    backoff: { type: 'exponential', delay: config.EMAIL_BACKOFF_MS },
    removeOnComplete: { age: kept.daysAfterSuccess * day },
    removeOnFail: { age: kept.daysAfterFailure * day },
  });
}

/**
 * Turns events of `eventTypes` into e-mail jobs from its own checkpoint (a row of
 * projection_checkpoints), moved only after the batch's jobs were added: a crash in between adds
 * them again, and BullMQ drops a job whose id it has (at least once in, at most once out).
 */
export function mailEnqueuer<Data>(options: {
  /** The checkpoint's name. */
  name: string;
  eventTypes: readonly string[];
  store: EventStore;
  /** The owner role: the checkpoint table. */
  pool: Pool;
  /** The queue's adding side (structural: BullMQ's job types cannot be named for any `Data`). */
  queue: { addBulk(jobs: { name: string; data: Data; opts: { jobId: string } }[]): Promise<unknown> };
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number | undefined;
  /** Ids only: what the worker needs to read the rest when it sends. */
  jobOf(event: RecordedEvent): { data: Data; jobId: string };
}): EventProcessor {
  return new EventProcessor({
    name: options.name,
    store: options.store,
    pool: options.pool,
    logger: options.logger,
    // Every stream (with a stream filter, a subscription with nothing to enqueue never moves its
    // checkpoint and reads the whole log again at every poll), but only these events reach the
    // handler: the others cost no transaction each.
    eventTypes: new Set(options.eventTypes),
    // An e-mail may leave a quarter of a second later; the log is read a few times a second
    // instead of after every append.
    batchWindowMs: 250,
    batchSize: 500,
    leaseMs: options.leaseMs,
    handler: {
      async handle(events) {
        await options.queue.addBulk(
          events.map((event) => {
            const { data, jobId } = options.jobOf(event);
            return { name: 'send', data, opts: { jobId } };
          }),
        );
      },
    },
  });
}

/** An e-mail flow in one piece: its queue, its enqueuer and (unless left out) its senders. */
export async function startMailFlow(options: {
  queue: Pick<Queue, 'close'>;
  enqueuer: EventProcessor;
  worker?: Pick<MailWorker<unknown, string>, 'start' | 'close'>;
  /** What is sent, for the logs: "invitation e-mail". */
  kind: string;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const { queue, enqueuer, worker } = options;
  worker?.start();
  await enqueuer.start();
  return {
    async stop() {
      await enqueuer.stop();
      await worker?.close();
      await queue.close();
    },
  };
}
