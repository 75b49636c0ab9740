import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import { afterAppendHook } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import { SigningKeyCommands } from './commands/signing-key.commands.ts';
import { WebhookCommands, type WebhookCommandDeps } from './commands/webhooks.commands.ts';
import type { WebhookDeliveryJob } from './deliveries/delivery-job.ts';
import { webhooksEventTypes } from './domain/webhooks.events.ts';
import { webhookRoutes } from './http/webhooks.routes.ts';
import { webhooksMigrations } from './migrations.ts';
import { signingKeyRotationNotice, webhooksInvalidationsOf } from './projections/signing-key-notice.ts';
import { webhooksProjection } from './projections/webhooks.projection.ts';
import type { WebhookQueries } from './queries/webhooks.queries.ts';

/** What the webhooks context is built from: its commands' collaborators and its queries. */
export interface WebhooksContextDeps extends WebhookCommandDeps {
  consistency: ReadModelConsistency;
  webhookQueries: WebhookQueries;
  vault: Pick<Vault, 'encrypt' | 'decrypt'>;
  /** WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS. */
  signingKeyOverlapSeconds: number;
  /** Queues deliveries for the webhook worker (the gateway's producer handle). */
  enqueueWebhookDeliveries: (deliveries: WebhookDeliveryJob[]) => Promise<void>;
  redeliverWebhookDelivery: (tenantId: string, webhookId: string, deliveryId: string) => Promise<boolean>;
}

/** What the webhooks context contributes to the service (the runtime lists it in contexts.ts). */
export const webhooksContext: ContextManifest<WebhooksContextDeps> = {
  name: 'webhooks',
  migrations: webhooksMigrations,
  // Read back right after a write: written in the append with PROJECTIONS=inline.
  projections: { consistent: [webhooksProjection], trailing: [] },
  effects: {
    inline: [signingKeyRotationNotice],
    // With an external store the rotation is announced after the append.
    external: [afterAppendHook(signingKeyRotationNotice)],
  },
  invalidations: webhooksInvalidationsOf,
  eventTypes: webhooksEventTypes,
  // The context's composition step: its commands, built once from the process's collaborators.
  routes: (deps) =>
    webhookRoutes({
      commands: new WebhookCommands(deps),
      queries: deps.webhookQueries,
      consistency: deps.consistency,
      signingKeys: new SigningKeyCommands(deps),
      enqueueWebhookDeliveries: (deliveries) => deps.enqueueWebhookDeliveries(deliveries),
      redeliverWebhookDelivery: (tenantId, webhookId, deliveryId) =>
        deps.redeliverWebhookDelivery(tenantId, webhookId, deliveryId),
      clock: deps.clock,
    }),
};
