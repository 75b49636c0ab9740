import { publicEvents, webhookEventSources } from '@tokenvault/contracts';
import { EventProcessor } from '@tokenvault/cqrs';
import type { EventStore, RecordedEvent } from '@tokenvault/eventstore';
import type { Queue } from '@tokenvault/jobs';
import type { Logger, Pool, PoolClient } from '@tokenvault/platform';
import type { WebhooksEvent } from '../domain/webhooks.events.ts';
import {
  enqueueDrains,
  webhookDeliveryId,
  type WebhookDeliveryJob,
  type WebhookQueueJob,
} from './delivery-job.ts';

/** The enqueuer's row of projection_checkpoints. */
export const webhookDeliveryEnqueuerName = 'webhook-delivery-enqueuer';

/** The webhook event type of each public event a webhook may subscribe to. */
const webhookTypeOf = new Map<string, string>(
  Object.entries(webhookEventSources).map(([webhookType, eventType]) => [eventType, webhookType]),
);

const subscriptionEvents = [
  'WebhookCreated',
  'WebhookUpdated',
  'WebhookDeleted',
  'WebhookDisabled',
  'TenantDeleted',
];

type SubscriptionEvent = WebhooksEvent | { type: 'TenantDeleted'; data: { tenant_id: string } };

/** Keeps the enqueuer's copy of the subscriptions as the log says, in the checkpoint's transaction. */
async function applySubscription(event: SubscriptionEvent, tx: PoolClient): Promise<void> {
  switch (event.type) {
    case 'WebhookCreated':
    case 'WebhookUpdated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO webhook_delivery_subscriptions (tenant_id, webhook_id, url, events, status)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (tenant_id, webhook_id) DO UPDATE SET url = $3, events = $4, status = $5`,
        [d.tenant_id, d.webhook_id, d.url, d.events, d.status],
      );
      return;
    }
    // Kept as deleted rather than removed: to the worker, a missing row is one whose batch has not
    // committed yet (its jobs are queued just before), a deleted one gets nothing more.
    case 'WebhookDeleted':
      await tx.query(
        `UPDATE webhook_delivery_subscriptions SET status = 'deleted' WHERE tenant_id = $1 AND webhook_id = $2`,
        [event.data.tenant_id, event.data.webhook_id],
      );
      return;
    case 'WebhookDisabled':
      await tx.query(
        `UPDATE webhook_delivery_subscriptions SET status = 'disabled' WHERE tenant_id = $1 AND webhook_id = $2`,
        [event.data.tenant_id, event.data.webhook_id],
      );
      return;
    case 'TenantDeleted':
      await tx.query(`UPDATE webhook_delivery_subscriptions SET status = 'deleted' WHERE tenant_id = $1`, [
        event.data.tenant_id,
      ]);
      await tx.query('DELETE FROM webhook_deliveries WHERE tenant_id = $1', [event.data.tenant_id]);
      await tx.query('DELETE FROM webhook_pending_deliveries WHERE tenant_id = $1', [event.data.tenant_id]);
      return;
    case 'WebhookSigningKeyRotated':
      return;
  }
}

/**
 * The deliveries of one batch: for each event a webhook may subscribe to, one delivery to each
 * enabled webhook of the event's tenant subscribed to its type, matched against the
 * subscriptions as the log stood at that event (the batch's earlier events already applied).
 * Each is numbered after its webhook's last delivery, and recorded as pending under that number,
 * in the batch's transaction: a replay after a crash numbers the same events the same way.
 */
export async function deliveriesOf(
  events: readonly RecordedEvent[],
  tx: PoolClient,
): Promise<WebhookDeliveryJob[]> {
  const deliveries: WebhookDeliveryJob[] = [];
  /** The batch's last number of each webhook it delivers to, by `<tenant>/<webhook>`. */
  const lastSequences = new Map<string, number>();
  /**
   * Each tenant's enabled webhooks, read once per batch (not once per event: at a few hundred
   * events a second that was the enqueuer's whole time), and read again after the batch changes
   * them.
   */
  const enabledByTenant = new Map<
    string,
    { webhook_id: string; events: string[]; last_sequence: string }[]
  >();
  for (const event of events) {
    if (subscriptionEvents.includes(event.type)) {
      await applySubscription(event as unknown as SubscriptionEvent, tx);
      enabledByTenant.delete((event.data as { tenant_id: string }).tenant_id);
      continue;
    }
    const webhookType = webhookTypeOf.get(event.type);
    const contract = publicEvents[event.type];
    const tenantId = (event.data as { tenant_id?: unknown }).tenant_id;
    if (!webhookType || !contract || typeof tenantId !== 'string') continue;
    let enabled = enabledByTenant.get(tenantId);
    if (!enabled) {
      enabled = (
        await tx.query<{ webhook_id: string; events: string[]; last_sequence: string }>(
          `SELECT webhook_id, events, last_sequence FROM webhook_delivery_subscriptions
             WHERE tenant_id = $1 AND status = 'enabled' ORDER BY webhook_id`,
          [tenantId],
        )
      ).rows;
      enabledByTenant.set(tenantId, enabled);
    }
    const subscribed = enabled.filter((webhook) => webhook.events.includes(webhookType));
    if (subscribed.length === 0) continue;
    // The allow-list's parse drops every field its schema does not name.
    const data = contract.schema.parse(event.data);
    for (const { webhook_id: webhookId, last_sequence: stored } of subscribed) {
      const key = `${tenantId}/${webhookId}`;
      const sequence = (lastSequences.get(key) ?? Number(stored)) + 1;
      lastSequences.set(key, sequence);
      deliveries.push({
        delivery_id: webhookDeliveryId(webhookId, event.event_id),
        tenant_id: tenantId,
        webhook_id: webhookId,
        event_id: event.event_id,
        type: webhookType,
        occurred_at: event.created_at.toISOString(),
        sequence,
        data,
      });
    }
  }
  await recordPending(deliveries, lastSequences, tx);
  return deliveries;
}

/** The batch's numbers: each webhook's last one, and a pending row per delivery. */
async function recordPending(
  deliveries: readonly WebhookDeliveryJob[],
  lastSequences: ReadonlyMap<string, number>,
  tx: PoolClient,
): Promise<void> {
  if (deliveries.length === 0) return;
  const keys = [...lastSequences.keys()].map((key) => key.split('/'));
  await tx.query(
    `UPDATE webhook_delivery_subscriptions AS s SET last_sequence = n.last_sequence
       FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS n(tenant_id, webhook_id, last_sequence)
       WHERE s.tenant_id = n.tenant_id AND s.webhook_id = n.webhook_id`,
    [keys.map(([tenantId]) => tenantId), keys.map(([, webhookId]) => webhookId), [...lastSequences.values()]],
  );
  await tx.query(
    `INSERT INTO webhook_pending_deliveries (tenant_id, webhook_id, sequence, delivery_id, delivery)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::jsonb[])`,
    [
      deliveries.map((delivery) => delivery.tenant_id),
      deliveries.map((delivery) => delivery.webhook_id),
      deliveries.map((delivery) => delivery.sequence),
      deliveries.map((delivery) => delivery.delivery_id),
      deliveries.map((delivery) => JSON.stringify(delivery)),
    ],
  );
}

export interface WebhookDeliveryEnqueuerOptions {
  store: EventStore;
  /** The owner role: the checkpoint and the subscriptions' copy. */
  pool: Pool;
  queue: Queue<WebhookQueueJob>;
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}

/**
 * Turns the event log into pending deliveries: a checkpointed EventProcessor whose batch updates
 * its own copy of the subscriptions, records the batch's deliveries as pending in its checkpoint's
 * transaction, and queues a drain for each webhook they are to just before that commits (the
 * drain waits for the commit). A crash in between records them again from the log, numbered the
 * same: at least once in, once per delivery id out.
 */
export function webhookDeliveryEnqueuer(options: WebhookDeliveryEnqueuerOptions): EventProcessor {
  return new EventProcessor({
    name: webhookDeliveryEnqueuerName,
    store: options.store,
    pool: options.pool,
    logger: options.logger,
    eventTypes: new Set([...subscriptionEvents, ...webhookTypeOf.keys()]),
    // A delivery may leave a tenth of a second later; the log is read a few times a second.
    batchWindowMs: 100,
    batchSize: 500,
    leaseMs: options.leaseMs,
    handler: {
      async handle(events, tx) {
        await enqueueDrains(options.queue, await deliveriesOf(events, tx));
      },
    },
  });
}
