import { aggregateStream } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { webhookDecider } from '../domain/webhook.ts';
import { streams } from '../domain/webhooks.events.ts';

/** What the e-mail telling a webhook's `notify_email` it was disabled says, read when it is sent. */
export interface DisabledWebhookMailFacts {
  email: string;
  name: string;
  /** The receiver's host alone: its path and query may carry credentials. */
  urlHost: string;
}

/**
 * The webhook as its event stream has it (not the read model, which may lag behind the event that
 * asked for the e-mail). Undefined when there is nothing to tell: the webhook is deleted, enabled
 * again meanwhile, or has no `notify_email`.
 */
export async function loadDisabledWebhookMailFacts(
  store: EventStore,
  tenantId: string,
  webhookId: string,
): Promise<DisabledWebhookMailFacts | undefined> {
  const { state } = await aggregateStream(store, streams.webhook(tenantId, webhookId), webhookDecider);
  if (state.status !== 'active') return undefined;
  const { webhook } = state;
  if (webhook.status !== 'disabled' || !webhook.notify_email) return undefined;
  return { email: webhook.notify_email, name: webhook.name, urlHost: new URL(webhook.url).host };
}
