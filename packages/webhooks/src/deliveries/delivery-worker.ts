import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { webhookPingEventType } from '@tokenvault/contracts';
import {
  AddressAllowlist,
  DestinationConnections,
  resolveDestination,
  sendToDestination,
  systemResolver,
  type Resolver,
  type SendLimits,
} from '@tokenvault/destinations';
import {
  createWorker,
  DelayedError,
  webhookDeliveryQueueName,
  type Job,
  type Queue,
  type Worker,
} from '@tokenvault/jobs';
import {
  failedJobOutcome,
  Problem,
  queueJobsTotal,
  type Clock,
  type Logger,
  type Pool,
} from '@tokenvault/platform';
import type { SigningKeyCommands } from '../commands/signing-key.commands.ts';
import type { WebhookCommands } from '../commands/webhooks.commands.ts';
import {
  deliveryBackoffMs,
  deliveryBody,
  type WebhookDeliveryConfig,
  type WebhookDeliveryJob,
} from './delivery-job.ts';
import { signatureHeaders } from './signature.ts';

/** How one delivery job ended (a failed attempt throws, for BullMQ to retry it). */
export type DeliveryOutcome = 'succeeded' | 'gone' | 'skipped';

/** What one attempt came to, as the history keeps it: never a body, never an address. */
interface Attempt {
  status: 'succeeded' | 'retrying' | 'failed' | 'gone';
  responseStatus: number | null;
  error: string | null;
}

/**
 * How long a delivery waiting for an earlier one of its webhook stays parked before it looks
 * again. The earlier one's end promotes it at once; this bounds the wait only when that promotion
 * is lost (a sender killed between its end and the promotion).
 */
const waitingDeliveryRecheckMs = 60_000;

export interface WebhookDeliveryWorkerOptions {
  config: WebhookDeliveryConfig;
  /** The queue its jobs are on: a delivery promotes the next one of its webhook when it ends. */
  queue: Pick<Queue<WebhookDeliveryJob>, 'getJob'>;
  /** The owner role: the subscriptions' copy and the history. */
  ownerPool: Pool;
  signingKeys: Pick<SigningKeyCommands, 'secrets'>;
  /** Disables a webhook whose receiver is gone (410) or keeps failing. */
  webhooks: Pick<WebhookCommands, 'disable'>;
  clock: Clock;
  logger: Logger;
  /** How receiver names are resolved (tests give their own). */
  resolver?: Resolver;
}

/**
 * The senders of webhook deliveries. Each attempt reads the webhook's URL from the enqueuer's copy
 * of the subscriptions (a deleted webhook gets nothing more, a disabled one nothing but pings),
 * resolves its name once and checks every address against the destination rules, connects to the
 * address checked (a rebinding answer never matters), follows no redirect, reads at most
 * WEBHOOK_MAX_RESPONSE_BYTES within WEBHOOK_TIMEOUT_MS, and records the outcome in the history.
 * A 2xx ends the delivery; any other answer or failure is retried with backoff and jitter.
 */
export class WebhookDeliveryWorker {
  private readonly worker: Worker<WebhookDeliveryJob, DeliveryOutcome>;
  private readonly options: WebhookDeliveryWorkerOptions;
  private readonly connections = new DestinationConnections({
    maxPools: 256,
    maxIdleSocketsPerPool: 4,
    idleTimeoutMs: 30_000,
  });
  private readonly allowlist: AddressAllowlist;
  private readonly limits: SendLimits;

  constructor(options: WebhookDeliveryWorkerOptions) {
    this.options = options;
    const { config, logger } = options;
    this.allowlist = new AddressAllowlist(
      config.WEBHOOK_ALLOWED_PRIVATE_ADDRESSES,
      'WEBHOOK_ALLOWED_PRIVATE_ADDRESSES',
    );
    this.limits = {
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
      ...(config.WEBHOOK_CA_FILE
        ? { ca: [...rootCertificates, readFileSync(config.WEBHOOK_CA_FILE, 'utf8')] }
        : {}),
    };
    this.worker = createWorker<WebhookDeliveryJob, DeliveryOutcome>(
      webhookDeliveryQueueName,
      config,
      (job, token) => this.process(job, token),
      {
        concurrency: config.WORKER_CONCURRENCY,
        // A sender that dies mid-delivery (its lock, renewed every half of it, stops) has its
        // delivery taken up again within about WEBHOOK_DELIVERY_LOCK_MS: at least once, never lost.
        lockDuration: config.WEBHOOK_DELIVERY_LOCK_MS,
        stalledInterval: config.WEBHOOK_DELIVERY_LOCK_MS,
        settings: {
          backoffStrategy: (attemptsMade) => deliveryBackoffMs(attemptsMade, config.WEBHOOK_BACKOFF_MS),
        },
      },
    );
    this.worker.on('completed', () =>
      queueJobsTotal.inc({ queue: webhookDeliveryQueueName, outcome: 'completed' }),
    );
    this.worker.on('failed', (job) => {
      queueJobsTotal.inc({ queue: webhookDeliveryQueueName, outcome: failedJobOutcome(job) });
    });
    this.worker.on('error', (error) => logger.warn({ err: error }, 'webhook delivery worker error'));
  }

  start(): void {
    void this.worker
      .run()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, 'webhook delivery worker stopped'),
      );
  }

  /** Waits for the deliveries in flight; nothing new is taken. */
  async close(): Promise<void> {
    await this.worker.close();
    this.connections.close();
  }

  private async process(
    job: Job<WebhookDeliveryJob, DeliveryOutcome>,
    token: string | undefined,
  ): Promise<DeliveryOutcome> {
    const { signingKeys, clock, logger } = this.options;
    const delivery = job.data;
    const webhook = await this.subscription(delivery);
    if (
      webhook.status === 'deleted' ||
      (webhook.status !== 'enabled' && delivery.type !== webhookPingEventType)
    ) {
      logger.info({ jobId: job.id }, 'webhook delivery skipped: the webhook is deleted or disabled');
      await this.finished(delivery);
      return 'skipped';
    }
    if (await this.parkedBehindEarlier(job, token)) throw new DelayedError();
    const attempt = job.attemptsMade + 1;
    const last = attempt >= (job.opts.attempts ?? 1);
    const outcome = await this.attempt(delivery, webhook.url, await signingKeys.secrets(delivery.tenant_id));
    const recorded: Attempt =
      outcome.status === 'succeeded' || outcome.status === 'gone' || !last
        ? outcome
        : { ...outcome, status: 'failed' };
    await this.record(delivery, attempt, recorded, clock.now());
    logger.info(
      { jobId: job.id, attempt, status: recorded.status, responseStatus: recorded.responseStatus },
      'webhook delivery attempted',
    );
    if (recorded.status === 'gone')
      await this.options.webhooks.disable(delivery.tenant_id, delivery.webhook_id, 'gone');
    if (recorded.status === 'failed' && (await this.failingInARow(delivery))) {
      await this.options.webhooks.disable(delivery.tenant_id, delivery.webhook_id, 'failing');
    }
    // Ended (a 2xx, a 410, or every attempt spent): the webhook's next delivery may go.
    if (recorded.status !== 'retrying') await this.finished(delivery);
    if (recorded.status === 'succeeded' || recorded.status === 'gone') return recorded.status;
    throw new Error(`webhook delivery failed: ${recorded.error ?? `answered ${recorded.responseStatus}`}`);
  }

  /** The earliest delivery of this webhook still pending before this one, if any. */
  private async earlierPending(delivery: WebhookDeliveryJob): Promise<string | undefined> {
    const earlier = await this.options.ownerPool.query<{ delivery_id: string }>(
      `SELECT delivery_id FROM webhook_pending_deliveries
         WHERE tenant_id = $1 AND webhook_id = $2 AND sequence < $3 ORDER BY sequence LIMIT 1`,
      [delivery.tenant_id, delivery.webhook_id, delivery.sequence],
    );
    return earlier.rows[0]?.delivery_id;
  }

  /**
   * Order per webhook: a delivery with an earlier one of its webhook still pending (in flight,
   * or waiting for its retry) is parked in the delayed set, spending no attempt, until that one
   * ends and promotes it. Parked first and checked again after, so that an end between the check
   * and the parking is not missed: either the ender sees it parked, or it sees the end.
   */
  private async parkedBehindEarlier(
    job: Job<WebhookDeliveryJob, DeliveryOutcome>,
    token: string | undefined,
  ): Promise<boolean> {
    const delivery = job.data;
    if (delivery.sequence === undefined || token === undefined) return false;
    for (;;) {
      const earlier = await this.earlierPending(delivery);
      if (!earlier) return false;
      // A pending row whose job the queue no longer holds (removed after a week, Redis lost)
      // would hold its webhook back for ever: it is dropped.
      if (await this.options.queue.getJob(earlier)) break;
      await this.options.ownerPool.query(
        'DELETE FROM webhook_pending_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND delivery_id = $3',
        [delivery.tenant_id, delivery.webhook_id, earlier],
      );
    }
    await job.moveToDelayed(Date.now() + waitingDeliveryRecheckMs, token);
    if (!(await this.earlierPending(delivery))) await promoteIfDelayed(job);
    return true;
  }

  /** Its pending row goes, and the next delivery of its webhook, if parked, is promoted. */
  private async finished(delivery: WebhookDeliveryJob): Promise<void> {
    if (delivery.sequence === undefined) return;
    const { ownerPool, queue } = this.options;
    await ownerPool.query(
      'DELETE FROM webhook_pending_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND sequence = $3',
      [delivery.tenant_id, delivery.webhook_id, delivery.sequence],
    );
    const next = await ownerPool.query<{ delivery_id: string }>(
      `SELECT delivery_id FROM webhook_pending_deliveries
         WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY sequence LIMIT 1`,
      [delivery.tenant_id, delivery.webhook_id],
    );
    const nextJob = next.rows[0] && (await queue.getJob(next.rows[0].delivery_id));
    if (nextJob) await promoteIfDelayed(nextJob);
  }

  /**
   * The webhook as the enqueuer's copy has it. The enqueuer queues a batch's jobs just before its
   * transaction commits, so a webhook created in that batch, or the batch's numbering of its
   * deliveries (which the order rests on), may not be readable yet: it is waited for a little, and
   * then the attempt fails (and is retried), since skipping it would lose it.
   */
  private async subscription(delivery: WebhookDeliveryJob): Promise<{ url: string; status: string }> {
    for (let wait = 0; ; wait++) {
      const result = await this.options.ownerPool.query<{
        url: string;
        status: string;
        last_sequence: string;
      }>(
        `SELECT url, status, last_sequence FROM webhook_delivery_subscriptions
           WHERE tenant_id = $1 AND webhook_id = $2`,
        [delivery.tenant_id, delivery.webhook_id],
      );
      const row = result.rows[0];
      if (row && (delivery.sequence === undefined || Number(row.last_sequence) >= delivery.sequence))
        return row;
      if (wait === 20) throw new Error('the webhook is not recorded yet: the delivery is retried');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** One signed POST to the checked address. */
  private async attempt(delivery: WebhookDeliveryJob, url: string, secrets: string[]): Promise<Attempt> {
    if (secrets.length === 0) return { status: 'retrying', responseStatus: null, error: 'No signing key' };
    const body = deliveryBody(delivery);
    const timestamp = Math.floor(this.options.clock.now().getTime() / 1000);
    try {
      const destination = await resolveDestination(
        new URL(url),
        { allowlist: this.allowlist, resolver: this.options.resolver ?? systemResolver },
        'url',
      );
      const response = await sendToDestination(
        destination,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'tokenvault-webhooks',
            ...signatureHeaders(secrets, delivery.delivery_id, timestamp, body),
          },
          body: Buffer.from(body),
        },
        this.limits,
        this.connections.poolFor(delivery.tenant_id, destination),
      );
      if (response.status >= 200 && response.status < 300) {
        return { status: 'succeeded', responseStatus: response.status, error: null };
      }
      if (response.status === 410) return { status: 'gone', responseStatus: 410, error: null };
      return { status: 'retrying', responseStatus: response.status, error: null };
    } catch (error) {
      // The destination rules' refusals and the sender's failures name no address.
      const reason =
        error instanceof Problem
          ? [error.detail, ...Object.values(error.errors ?? {}).flat()].filter(Boolean).join(' ')
          : 'The receiver could not be reached.';
      return { status: 'retrying', responseStatus: null, error: reason };
    }
  }

  /** The webhook's last WEBHOOK_DISABLE_AFTER_FAILURES deliveries all failed every attempt. */
  private async failingInARow(delivery: WebhookDeliveryJob): Promise<boolean> {
    const limit = this.options.config.WEBHOOK_DISABLE_AFTER_FAILURES;
    const last = await this.options.ownerPool.query<{ status: string }>(
      `SELECT status FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2
         ORDER BY last_attempt_at DESC LIMIT $3`,
      [delivery.tenant_id, delivery.webhook_id, limit],
    );
    return last.rows.length === limit && last.rows.every((row) => row.status === 'failed');
  }

  private async record(delivery: WebhookDeliveryJob, attempt: number, outcome: Attempt, now: Date) {
    await this.options.ownerPool.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, id, event_id, event_type, status, attempts,
                                       response_status, error, created_at, last_attempt_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
         ON CONFLICT (tenant_id, webhook_id, id) DO UPDATE SET status = $6, attempts = $7,
           response_status = $8, error = $9, last_attempt_at = $10`,
      [
        delivery.tenant_id,
        delivery.webhook_id,
        delivery.delivery_id,
        delivery.event_id,
        delivery.type,
        outcome.status,
        attempt,
        outcome.responseStatus,
        outcome.error,
        now,
      ],
    );
    // The history is bounded: this webhook's deliveries past WEBHOOK_HISTORY_DAYS go as it grows.
    await this.options.ownerPool.query(
      `DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2
         AND created_at < $3::timestamptz - make_interval(days => $4)`,
      [delivery.tenant_id, delivery.webhook_id, now, this.options.config.WEBHOOK_HISTORY_DAYS],
    );
  }
}

/** Moves a parked job to the waiting list; nothing when it is not delayed (any more). */
async function promoteIfDelayed(job: Pick<Job<WebhookDeliveryJob>, 'promote'>): Promise<void> {
  try {
    await job.promote();
  } catch {
    // Not delayed: waiting, in flight or done already, which is what promoting was for.
  }
}
