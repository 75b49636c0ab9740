export { webhooksContext, type WebhooksContextDeps } from './context.ts';
export { WebhookCommands, type WebhookCommandDeps } from './commands/webhooks.commands.ts';
export {
  streams as webhooksStreams,
  webhooksEventTypes,
  type WebhooksEvent,
} from './domain/webhooks.events.ts';
export { WebhookQueries } from './queries/webhooks.queries.ts';
export { startWebhookDeliveries } from './deliveries/start-deliveries.ts';
export {
  createWebhookDeliveryQueue,
  deliveryBody,
  enqueueDeliveries,
  redeliver,
  webhookDeliveryId,
  type WebhookDeliveryConfig,
  type WebhookDeliveryJob,
} from './deliveries/delivery-job.ts';
export { webhookDeliveryEnqueuerName } from './deliveries/delivery-enqueuer.ts';
export {
  loadDisabledWebhookMailFacts,
  type DisabledWebhookMailFacts,
} from './queries/webhook-mail.queries.ts';
