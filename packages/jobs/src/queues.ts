import {
  Queue,
  QueueEvents,
  Worker,
  type ConnectionOptions,
  type DefaultJobOptions,
  type Processor,
  type WorkerOptions,
} from 'bullmq';
import type { Config } from '@tokenvault/platform';

// The BullMQ types the queues' users need: nothing but this package imports bullmq.
export type { Job, Queue, QueueEvents, Worker } from 'bullmq';

/** What a queue, its workers and its events read of the configuration. */
export type QueueConfig = Pick<Config, 'REDIS_URL' | 'QUEUE_PREFIX'>;

// Every BullMQ queue of the service. A name is part of its Redis keys: renaming one abandons its jobs.
/** Invitation e-mails (enqueued from the event store, sent by the mail worker). */
export const invitationMailQueueName = 'invitation-email';
/** Sign-in link e-mails (enqueued by the gateway, sent by the mail worker). */
export const signInMailQueueName = 'sign-in-email';
/** Reactor runs (queued by the gateway, run by the reactor worker in the sandbox). */
export const reactorRunQueueName = 'reactor-run';

export const queueNames = [invitationMailQueueName, signInMailQueueName, reactorRunQueueName] as const;

export type QueueName = (typeof queueNames)[number];

/**
 * The one connection rule of every queue, worker and event listener: each opens its own Redis
 * connection from these options, with maxRetriesPerRequest: null, which BullMQ's blocking commands
 * need (a command is never failed after a few retries: it waits for Redis to come back).
 */
function connectionOf(config: Pick<Config, 'REDIS_URL'>): ConnectionOptions {
  return { url: config.REDIS_URL, maxRetriesPerRequest: null };
}

/** A producer's handle on a queue (adds, reads and removes jobs), under QUEUE_PREFIX. */
export function createQueue<Data, Result = unknown>(
  name: QueueName,
  config: QueueConfig,
  defaultJobOptions?: DefaultJobOptions,
): Queue<Data, Result> {
  return new Queue<Data, Result>(name, {
    connection: connectionOf(config),
    prefix: config.QUEUE_PREFIX,
    ...(defaultJobOptions ? { defaultJobOptions } : {}),
  });
}

/** A pool of consumers of a queue; it takes nothing until its owner calls run(). */
export function createWorker<Data, Result>(
  name: QueueName,
  config: QueueConfig,
  process: Processor<Data, Result>,
  options: Pick<WorkerOptions, 'concurrency' | 'maxStalledCount'>,
): Worker<Data, Result> {
  return new Worker<Data, Result>(name, process, {
    ...options,
    connection: connectionOf(config),
    prefix: config.QUEUE_PREFIX,
    autorun: false,
  });
}

/** The completion and failure events of a queue's jobs (what waiting for a job's end listens on). */
export function createQueueEvents(name: QueueName, config: QueueConfig): QueueEvents {
  return new QueueEvents(name, { connection: connectionOf(config), prefix: config.QUEUE_PREFIX });
}

/** Removes every key of every queue under QUEUE_PREFIX (tests' throw-away prefixes). */
export async function obliterateQueues(config: QueueConfig): Promise<void> {
  for (const name of queueNames) {
    const queue = createQueue(name, config);
    try {
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
  }
}
