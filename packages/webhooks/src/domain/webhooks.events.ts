import type { DomainEvent } from '@tokenvault/cqrs';

/** A webhook's settings, as each of its created and updated facts writes them out. */
interface WebhookSettingsData {
  webhook_id: string;
  tenant_id: string;
  name: string;
  /** Checked against the destination rules when decided, and again at each delivery. */
  url: string;
  /** Webhook event names (`token:created`, …). */
  events: string[];
  /** Told when the webhook is disabled after failures; never published, never logged. */
  notify_email?: string;
  status: 'enabled' | 'disabled';
}

export type WebhooksEvent =
  | DomainEvent<'WebhookCreated', WebhookSettingsData & { created_by: string; created_at: string }>
  | DomainEvent<'WebhookUpdated', WebhookSettingsData & { modified_by: string; modified_at: string }>
  | DomainEvent<
      'WebhookDeleted',
      { webhook_id: string; tenant_id: string; deleted_by: string; deleted_at: string }
    >;

export const streams = {
  webhook: (tenantId: string, webhookId: string) => `webhooks.webhook-${tenantId}-${webhookId}`,
};

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const webhooksEventTypes = Object.keys({
  WebhookCreated: true,
  WebhookUpdated: true,
  WebhookDeleted: true,
} satisfies Record<WebhooksEvent['type'], true>) as WebhooksEvent['type'][];
