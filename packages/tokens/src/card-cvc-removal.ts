import {
  cardCvcRemovalQueueName,
  createQueue,
  createWorker,
  type Job,
  type Queue,
  type QueueConfig,
  type Worker,
} from '@tokenvault/jobs';
import { EventProcessor } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { failedJobOutcome, queueJobsTotal, type Config, type Logger, type Pool } from '@tokenvault/platform';
import {
  CvcNotDueYet,
  removeCardCvc,
  type CardCvcRemovalDeps,
  type CardCvcRemovalOutcome,
} from './commands/remove-card-cvc.ts';
import type { DataOf } from '@tokenvault/cqrs';
import type { TokenEvent } from './domain/tokens.events.ts';

// A card's CVC is removed CARD_CVC_TTL_SECONDS after it was given (docs/token-types.md): every
// event that gives one (TokenCreated, TokenUpdated with `cvc_expires_at`) becomes a BullMQ job
// delayed until then, and the worker's job removes it (removeCardCvc).

/** Ids and a time only: the job opens the token's stream; no data ever goes through Redis. */
export interface CardCvcRemovalJob {
  tenant_id: string;
  token_id: string;
  /** The CVC's time as the event that gave it said: a newer CVC has a job of its own. */
  cvc_expires_at: string;
}

/** The enqueuer's row of projection_checkpoints. */
export const cardCvcRemovalEnqueuerName = 'card-cvc-removal-enqueuer';

export type CardCvcRemovalConfig = QueueConfig & Pick<Config, 'WORKER_CONCURRENCY'>;

export function createCardCvcRemovalQueue(
  config: QueueConfig,
  logger: Logger,
): Queue<CardCvcRemovalJob, CardCvcRemovalOutcome> {
  return createQueue<CardCvcRemovalJob, CardCvcRemovalOutcome>(cardCvcRemovalQueueName, config, logger, {
    // A removal that fails (the database away, a clock a little ahead of the worker's) is tried
    // again for about an hour and a half before it is given up (and kept, as a failed job, to see).
    attempts: 12,
    backoff: { type: 'exponential', delay: 1_000 },
    // Kept a day after success so that an enqueue replayed after a crash is still a duplicate
    // (and a late duplicate only finds no CVC to remove).
    removeOnComplete: { age: 24 * 3600 },
    removeOnFail: { age: 30 * 24 * 3600 },
  });
}

/** The jobs of a batch of events: one per CVC given, delayed until its time. */
export function cardCvcRemovalJobsOf(
  events: readonly { event_id: string; type: string; data: unknown }[],
  now: Date,
): { name: string; data: CardCvcRemovalJob; opts: { jobId: string; delay: number } }[] {
  return events.flatMap((event) => {
    if (event.type !== 'TokenCreated' && event.type !== 'TokenUpdated') return [];
    const data = event.data as DataOf<TokenEvent, 'TokenCreated' | 'TokenUpdated'>;
    if (!data.cvc_expires_at) return [];
    const job: CardCvcRemovalJob = {
      tenant_id: data.tenant_id,
      token_id: data.token_id,
      cvc_expires_at: data.cvc_expires_at,
    };
    // One job per event (BullMQ refuses ':' in ids, which token ids and times may hold).
    const delay = Math.max(0, Date.parse(data.cvc_expires_at) - now.getTime());
    return [{ name: 'remove-cvc', data: job, opts: { jobId: `cvc-${event.event_id}`, delay } }];
  });
}

/**
 * The pool of CVC removers: each job removes one card's CVC (removeCardCvc), retried with backoff
 * when it fails or runs before its time. close() waits for the jobs in flight.
 */
export class CardCvcRemovalWorker {
  private readonly worker: Worker<CardCvcRemovalJob, CardCvcRemovalOutcome>;
  private readonly logger: Logger;

  constructor(options: { config: CardCvcRemovalConfig; deps: CardCvcRemovalDeps; logger: Logger }) {
    const { config, deps, logger } = options;
    this.logger = logger;
    this.worker = createWorker<CardCvcRemovalJob, CardCvcRemovalOutcome>(
      cardCvcRemovalQueueName,
      config,
      async (job: Job<CardCvcRemovalJob, CardCvcRemovalOutcome>) => {
        const { outcome } = await removeCardCvc(
          deps,
          { tenantId: job.data.tenant_id, tokenId: job.data.token_id, cvcExpiresAt: job.data.cvc_expires_at },
          `cvc-removal-${job.id ?? 'unknown'}`,
        );
        logger.info({ jobId: job.id, outcome }, 'card CVC removal');
        return outcome;
      },
      { concurrency: config.WORKER_CONCURRENCY },
      logger,
    );
    this.worker.on('completed', () =>
      queueJobsTotal.inc({ queue: cardCvcRemovalQueueName, outcome: 'completed' }),
    );
    this.worker.on('failed', (job, error) => {
      queueJobsTotal.inc({ queue: cardCvcRemovalQueueName, outcome: failedJobOutcome(job) });
      // The error's message only: a removal's failures name no data.
      logger.warn(
        { jobId: job?.id, attemptsMade: job?.attemptsMade, notDue: error instanceof CvcNotDueYet },
        'card CVC removal failed; it will be retried while attempts remain',
      );
    });
  }

  start(): void {
    void this.worker
      .run()
      .catch((error: unknown) => this.logger.error({ err: error }, 'card CVC removal worker stopped'));
  }

  /** Waits for the jobs in flight to finish; nothing new is taken. */
  close(): Promise<void> {
    return this.worker.close();
  }
}

/**
 * The CVC removals in one piece: the enqueuer (an EventProcessor from its checkpoint: TokenCreated
 * and TokenUpdated events that give a CVC become delayed jobs, added before the checkpoint moves,
 * and dropped by BullMQ when added again after a crash), the queue and the worker pool.
 */
export async function startCardCvcRemoval(options: {
  /** The enqueuer's lease time comes from here too. */
  config: CardCvcRemovalConfig & Pick<Config, 'PROCESSOR_LEASE_MS'>;
  store: EventStore;
  /** The owner role: the checkpoint table. */
  ownerPool: Pool;
  deps: CardCvcRemovalDeps;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const { config, store, ownerPool, deps, logger } = options;
  const queue = createCardCvcRemovalQueue(config, logger);
  const enqueuer = new EventProcessor({
    name: cardCvcRemovalEnqueuerName,
    store,
    pool: ownerPool,
    logger,
    // Every stream (see the invitation e-mails' enqueuer), but only these events reach the handler.
    eventTypes: new Set(['TokenCreated', 'TokenUpdated']),
    batchWindowMs: 250,
    batchSize: 500,
    leaseMs: config.PROCESSOR_LEASE_MS,
    handler: {
      async handle(events) {
        const jobs = cardCvcRemovalJobsOf(events, deps.clock.now());
        if (jobs.length) await queue.addBulk(jobs);
      },
    },
  });
  const worker = new CardCvcRemovalWorker({ config, deps, logger });
  worker.start();
  await enqueuer.start();
  return {
    async stop() {
      await enqueuer.stop();
      await worker.close();
      await queue.close();
    },
  };
}
