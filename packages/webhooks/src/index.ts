export { webhooksContext, type WebhooksContextDeps } from './context.ts';
export { WebhookCommands, type WebhookCommandDeps } from './commands/webhooks.commands.ts';
export {
  streams as webhooksStreams,
  webhooksEventTypes,
  type WebhooksEvent,
} from './domain/webhooks.events.ts';
export { WebhookQueries } from './queries/webhooks.queries.ts';
