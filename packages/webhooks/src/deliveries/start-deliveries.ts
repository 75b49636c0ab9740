import type { EventStore } from '@tokenvault/eventstore';
import type { Clock, Config, Logger, Pool } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { AddressAllowlist } from '@tokenvault/destinations';
import { SigningKeyCommands } from '../commands/signing-key.commands.ts';
import { WebhookCommands } from '../commands/webhooks.commands.ts';
import { createWebhookDeliveryQueue, type WebhookDeliveryConfig } from './delivery-job.ts';
import { webhookDeliveryEnqueuer } from './delivery-enqueuer.ts';
import { WebhookDeliveryWorker } from './delivery-worker.ts';

/**
 * The webhook side of the worker role in one piece: the enqueuer (event log → delivery jobs, its
 * own checkpoint), the queue, and the senders.
 */
export async function startWebhookDeliveries(options: {
  /** The enqueuer's lease time comes from here too. */
  config: WebhookDeliveryConfig & Pick<Config, 'PROCESSOR_LEASE_MS'>;
  store: EventStore;
  /** The owner role: the checkpoint, the subscriptions' copy, the history. */
  ownerPool: Pool;
  vault: Pick<Vault, 'encrypt' | 'decrypt'>;
  clock: Clock;
  logger: Logger;
  /** The process's stale-cache notices (its ReadModelConsistency): signing-key rotations. */
  onInvalidation?: (listener: (key: string | null) => void) => void;
}): Promise<{ stop(): Promise<void> }> {
  const { config, store, ownerPool, vault, clock, logger, onInvalidation } = options;
  const queue = createWebhookDeliveryQueue(config, logger);
  const enqueuer = webhookDeliveryEnqueuer({
    store,
    pool: ownerPool,
    queue,
    logger,
    leaseMs: config.PROCESSOR_LEASE_MS,
  });
  const worker = new WebhookDeliveryWorker({
    config,
    queue,
    ownerPool,
    signingKeys: new SigningKeyCommands({
      store,
      clock,
      vault,
      signingKeyOverlapSeconds: config.WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS,
    }),
    webhooks: new WebhookCommands({
      store,
      clock,
      webhookAllowlist: new AddressAllowlist(
        config.WEBHOOK_ALLOWED_PRIVATE_ADDRESSES,
        'WEBHOOK_ALLOWED_PRIVATE_ADDRESSES',
      ),
    }),
    clock,
    logger,
    ...(onInvalidation ? { onInvalidation } : {}),
  });
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
