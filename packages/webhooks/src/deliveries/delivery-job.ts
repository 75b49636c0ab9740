import { createQueue, webhookDeliveryQueueName, type Queue } from '@tokenvault/jobs';
import type { Config, Logger } from '@tokenvault/platform';

/** What the delivery queue and its workers read of the configuration. */
export type WebhookDeliveryConfig = Pick<
  Config,
  | 'REDIS_URL'
  | 'QUEUE_PREFIX'
  | 'WORKER_CONCURRENCY'
  | 'WEBHOOK_ALLOWED_PRIVATE_ADDRESSES'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_MAX_RESPONSE_BYTES'
  | 'WEBHOOK_CA_FILE'
  | 'WEBHOOK_ATTEMPTS'
  | 'WEBHOOK_BACKOFF_MS'
  | 'WEBHOOK_DISABLE_AFTER_FAILURES'
  | 'WEBHOOK_HISTORY_DAYS'
  | 'WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS'
  | 'WEBHOOK_DELIVERY_LOCK_MS'
  | 'WEBHOOK_SWEEP_INTERVAL_MS'
  | 'WEBHOOK_DRAIN_BATCH_SIZE'
  | 'WEBHOOK_SIGNING_SECRETS_CACHE_MS'
>;

/**
 * One delivery: one event to one webhook. Its body is built from these fields alone, and `data`
 * is the event's public data (its public-events.ts allow-list entry, parsed), never more.
 */
export interface WebhookDeliveryJob {
  /** `<webhook id>.<event id>`: the job id, the `webhook-id` header, the same on every attempt. */
  delivery_id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  /** The webhook event type (`token:created`, `webhook:ping`). */
  type: string;
  /** When the event was appended (ISO 8601). */
  occurred_at: string;
  /**
   * Its place among its webhook's deliveries from the log (1, 2, …): it is not attempted before
   * every earlier one is finished. None for pings (sent at once, out of order).
   */
  sequence?: number;
  data: Record<string, unknown>;
}

/**
 * A turn at sending one webhook's pending deliveries (webhook_pending_deliveries) in order. One is
 * queued per webhook each time the enqueuer records deliveries for it; whichever drain holds the
 * webhook's lease sends, the others find it held and leave (the holder looks again after letting go).
 */
export interface WebhookDrainJob {
  kind: 'drain';
  tenant_id: string;
  webhook_id: string;
  /** The number of the last delivery the enqueuer's batch recorded: sent once it is committed. */
  through_sequence: number;
}

/** What the webhook-delivery queue carries: single deliveries (pings, redeliveries) and drains. */
export type WebhookQueueJob = WebhookDeliveryJob | WebhookDrainJob;

export const isDrainJob = (job: WebhookQueueJob): job is WebhookDrainJob =>
  (job as Partial<WebhookDrainJob>).kind === 'drain';

export const webhookDrainJobName = 'webhook-drain';

/** One delivery per webhook and event: a second enqueue (a replay after a crash) is dropped. */
export const webhookDeliveryId = (webhookId: string, eventId: string) => `${webhookId}.${eventId}`;

/** The body a receiver gets, signed as sent (docs/webhooks.md). */
export const deliveryBody = (job: WebhookDeliveryJob): string =>
  JSON.stringify({
    id: job.event_id,
    type: job.type,
    timestamp: job.occurred_at,
    tenant_id: job.tenant_id,
    webhook_id: job.webhook_id,
    data: job.data,
  });

/** The longest wait between two attempts. */
const maxBackoffMs = 6 * 3600 * 1000;

/**
 * The wait before attempt `attemptsMade + 1`: exponential from WEBHOOK_BACKOFF_MS, capped at 6 h,
 * less a random part of up to half, so that the retries of many deliveries to one receiver that
 * failed at once do not come back at once.
 */
export function deliveryBackoffMs(attemptsMade: number, firstMs: number, random = Math.random): number {
  const full = Math.min(maxBackoffMs, firstMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.round(full * (1 - random() / 2));
}

export const deliveryBackoffType = 'webhook-backoff';

export function createWebhookDeliveryQueue(
  config: WebhookDeliveryConfig,
  logger: Logger,
): Queue<WebhookQueueJob> {
  return createQueue<WebhookQueueJob>(webhookDeliveryQueueName, config, logger, {
    attempts: config.WEBHOOK_ATTEMPTS,
    backoff: { type: deliveryBackoffType },
    // Kept a week after the last attempt so that a replayed enqueue is still a duplicate; the
    // history (webhook_deliveries) is the record.
    removeOnComplete: { age: 7 * 24 * 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
  });
}

/** Adds deliveries, each under its delivery id (duplicates are dropped by BullMQ). */
export async function enqueueDeliveries(
  queue: Queue<WebhookQueueJob>,
  deliveries: readonly WebhookDeliveryJob[],
): Promise<void> {
  if (deliveries.length === 0) return;
  await queue.addBulk(
    deliveries.map((delivery) => ({
      name: delivery.type,
      data: delivery,
      opts: { jobId: delivery.delivery_id },
    })),
  );
}

/**
 * A drain for each webhook the deliveries are to, after the batch that recorded them as pending.
 * Its id names the batch's last number: a replay of the batch adds nothing new. Drains are not
 * kept once done (the pending rows and the history are the record).
 */
export async function enqueueDrains(
  queue: Queue<WebhookQueueJob>,
  deliveries: readonly WebhookDeliveryJob[],
): Promise<void> {
  const drains = new Map<string, WebhookDrainJob>();
  for (const delivery of deliveries) {
    if (delivery.sequence === undefined) continue;
    drains.set(delivery.webhook_id, {
      kind: 'drain',
      tenant_id: delivery.tenant_id,
      webhook_id: delivery.webhook_id,
      through_sequence: Math.max(delivery.sequence, drains.get(delivery.webhook_id)?.through_sequence ?? 0),
    });
  }
  if (drains.size === 0) return;
  await queue.addBulk(
    [...drains.values()].map((drain) => ({
      name: webhookDrainJobName,
      data: drain,
      opts: {
        jobId: `drain.${drain.webhook_id}.${drain.through_sequence}`,
        attempts: 1,
        removeOnComplete: true,
        removeOnFail: true,
      },
    })),
  );
}

/**
 * Sends a delivery of the tenant's webhook again, as it was (same delivery id, so a receiver that
 * has it drops it): a failed one is retried, a finished one queued anew. False when the queue no
 * longer holds it (kept a week) or it is not this tenant's webhook's.
 */
export async function redeliver(
  queue: Queue<WebhookQueueJob>,
  history: {
    sentDelivery(
      tenantId: string,
      webhookId: string,
      deliveryId: string,
    ): Promise<WebhookDeliveryJob | undefined>;
  },
  tenantId: string,
  webhookId: string,
  deliveryId: string,
): Promise<boolean> {
  const job = await queue.getJob(deliveryId);
  if (!job) {
    // A delivery sent by its webhook's drain has no job: it is queued anew from the history.
    const sent = await history.sentDelivery(tenantId, webhookId, deliveryId);
    if (!sent) return false;
    const { sequence: _inOrder, ...delivery } = sent;
    await queue.add(delivery.type, delivery, { jobId: `${deliveryId}.redelivery-${Date.now()}` });
    return true;
  }
  if (isDrainJob(job.data) || job.data.tenant_id !== tenantId || job.data.webhook_id !== webhookId)
    return false;
  const state = await job.getState();
  if (state === 'failed') {
    await job.retry('failed');
    return true;
  }
  if (state !== 'completed') return true; // still waiting, delayed or in flight: it will be sent
  await queue.add(job.name, job.data, { jobId: `${deliveryId}.redelivery-${Date.now()}` });
  return true;
}
