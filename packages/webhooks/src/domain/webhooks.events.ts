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
    >
  /** Disabled by its deliveries: its receiver answered 410, or too many deliveries in a row failed. */
  | DomainEvent<
      'WebhookDisabled',
      { webhook_id: string; tenant_id: string; reason: 'gone' | 'failing'; disabled_at: string }
    >
  | DomainEvent<
      'WebhookSigningKeyRotated',
      {
        tenant_id: string;
        /** The new key; the deliveries' signatures are made with it from now on. */
        key_id: string;
        /** The secret, sealed under the tenant's data key (`signingKeySubject`): never published. */
        secret_ciphertext: string;
        /** The key it replaces, if any: still signs beside the new one until `previous_valid_until`. */
        previous_key_id?: string;
        previous_valid_until?: string;
        rotated_by: string;
        rotated_at: string;
      }
    >;

/** A webhook's own facts (its stream's), without the tenant's signing keys (their own stream). */
export type WebhookLifecycleEvent = Exclude<WebhooksEvent, { type: 'WebhookSigningKeyRotated' }>;

/** What a signing secret is sealed for (the vault's associated data). */
export const signingKeySubject = (keyId: string) => `webhook-signing-key/${keyId}`;

export const streams = {
  webhook: (tenantId: string, webhookId: string) => `webhooks.webhook-${tenantId}-${webhookId}`,
  signingKey: (tenantId: string) => `webhooks.signing-key-${tenantId}`,
};

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const webhooksEventTypes = Object.keys({
  WebhookCreated: true,
  WebhookUpdated: true,
  WebhookDeleted: true,
  WebhookDisabled: true,
  WebhookSigningKeyRotated: true,
} satisfies Record<WebhooksEvent['type'], true>) as WebhooksEvent['type'][];
