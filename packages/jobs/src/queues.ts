import {
  Queue,
  Worker,
  type ConnectionOptions,
  type DefaultJobOptions,
  type Processor,
  type WorkerOptions,
} from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger, redisOutageLogOf, type Config, type Logger } from '@tokenvault/platform';

// The BullMQ types the queues' users need: nothing but this package imports bullmq.
export type { Job, Queue, Worker } from 'bullmq';
/** Thrown by a processor that moved its job to the delayed set itself (no attempt is spent). */
export { DelayedError } from 'bullmq';

/** What a queue and its workers read of the configuration. */
export type QueueConfig = Pick<Config, 'REDIS_URL' | 'QUEUE_PREFIX'>;

// Every BullMQ queue of the service. A name is part of its Redis keys: renaming one abandons its jobs.
/** Invitation e-mails (enqueued from the event store, sent by the mail worker). */
export const invitationMailQueueName = 'invitation-email';
/** Sign-in link e-mails (enqueued by the gateway, sent by the mail worker). */
export const signInMailQueueName = 'sign-in-email';
/** Reactor runs (queued by the gateway, run by the reactor worker in the sandbox). */
export const reactorRunQueueName = 'reactor-run';
/** Cards' CVC removals, delayed until CARD_CVC_TTL_SECONDS after each CVC was given (the worker). */
export const cardCvcRemovalQueueName = 'card-cvc-removal';
/** Webhook deliveries (enqueued from the event log and by pings, sent by the webhook worker). */
export const webhookDeliveryQueueName = 'webhook-delivery';
/** E-mails to a disabled webhook's notify_email (enqueued from the event store, sent by the mail worker). */
export const webhookDisabledMailQueueName = 'webhook-disabled-email';

export const queueNames = [
  invitationMailQueueName,
  signInMailQueueName,
  reactorRunQueueName,
  cardCvcRemovalQueueName,
  webhookDeliveryQueueName,
  webhookDisabledMailQueueName,
] as const;

export type QueueName = (typeof queueNames)[number];

/**
 * The one connection rule of every queue and worker: each opens its own Redis
 * connection from these options, with maxRetriesPerRequest: null, which BullMQ's blocking commands
 * need (a command is never failed after a few retries: it waits for Redis to come back).
 */
const waitForRedis = { maxRetriesPerRequest: null };

function connectionOf(config: Pick<Config, 'REDIS_URL'>): ConnectionOptions {
  return { url: config.REDIS_URL, ...waitForRedis };
}

/**
 * A connection for blocking reads beside the queues (a run's reply list): the same rule, since a
 * blocking command must wait for Redis to come back rather than fail after a few retries.
 */
export function createBlockingConnection(config: Pick<Config, 'REDIS_URL'>): Redis {
  return new Redis(config.REDIS_URL, { ...waitForRedis });
}

/** What a connection's `error` is while Redis cannot be reached (a refused or cut connection). */
const unreachableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
const isUnreachable = (error: Error) =>
  unreachableCodes.has((error as NodeJS.ErrnoException).code ?? '') ||
  error.message === 'Connection is closed.';

/**
 * While Redis is unreachable a queue's or worker's connections emit an `error` per reconnection
 * attempt: those go to `logger`'s RedisOutageLog, shared with every other connection of the
 * process (one line per outage, one at its end); any other error is logged as it comes.
 */
function reportErrors(
  owner: {
    on(event: 'error', listener: (error: Error) => void): unknown;
    getBackend(): { on(event: 'ready', listener: () => void): unknown };
  },
  source: string,
  logger: Logger,
): void {
  const outage = redisOutageLogOf(logger);
  owner.on('error', (error) => {
    if (isUnreachable(error)) outage.error(source, error);
    else logger.warn({ err: error, source }, 'queue connection error');
  });
  // Emitted by each of its connections whenever it is ready again.
  owner.getBackend().on('ready', () => outage.recovered());
}

/** A producer's handle on a queue (adds, reads and removes jobs), under QUEUE_PREFIX. */
export function createQueue<Data, Result = unknown>(
  name: QueueName,
  config: QueueConfig,
  logger: Logger,
  defaultJobOptions?: DefaultJobOptions,
): Queue<Data, Result> {
  const queue = new Queue<Data, Result>(name, {
    connection: connectionOf(config),
    prefix: config.QUEUE_PREFIX,
    ...(defaultJobOptions ? { defaultJobOptions } : {}),
  });
  reportErrors(queue, `${name} queue`, logger);
  return queue;
}

/** A pool of consumers of a queue; it takes nothing until its owner calls run(). */
export function createWorker<Data, Result>(
  name: QueueName,
  config: QueueConfig,
  process: Processor<Data, Result>,
  options: Pick<
    WorkerOptions,
    'concurrency' | 'maxStalledCount' | 'settings' | 'lockDuration' | 'stalledInterval'
  >,
  logger: Logger,
): Worker<Data, Result> {
  const worker = new Worker<Data, Result>(name, process, {
    ...options,
    connection: connectionOf(config),
    prefix: config.QUEUE_PREFIX,
    autorun: false,
  });
  reportErrors(worker, `${name} worker`, logger);
  return worker;
}

/** Removes every key of every queue under QUEUE_PREFIX (tests' throw-away prefixes). */
export async function obliterateQueues(config: QueueConfig): Promise<void> {
  for (const name of queueNames) {
    const queue = createQueue(name, config, createLogger('silent'));
    try {
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
  }
}
