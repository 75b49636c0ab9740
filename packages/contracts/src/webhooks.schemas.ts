import { z } from 'zod';
import { timestamp, uuid } from './common.ts';

/**
 * The events a webhook may subscribe to, by their webhook name (the anchor's `entity:verb`
 * names), each the public event it delivers. A delivery carries that event's public data only:
 * what its allow-list entry in public-events.ts lets out (never token data, keys or secrets).
 */
export const webhookEventSources = {
  'token:created': 'TokenCreated',
  'token:updated': 'TokenUpdated',
  'token:deleted': 'TokenDeleted',
  'application:created': 'ApplicationCreated',
  'application:updated': 'ApplicationUpdated',
  'application:deleted': 'ApplicationDeleted',
  'reactor:created': 'ReactorCreated',
  'reactor:updated': 'ReactorUpdated',
  'reactor:deleted': 'ReactorDeleted',
  'proxy:created': 'ProxyCreated',
  'proxy:updated': 'ProxyUpdated',
  'proxy:deleted': 'ProxyDeleted',
} as const;
export type WebhookEventType = keyof typeof webhookEventSources;
export const webhookEventTypes = Object.keys(webhookEventSources) as WebhookEventType[];

/** The webhook event a delivery of a test (`POST /webhooks/{id}/ping`) has: never subscribed to. */
export const webhookPingEventType = 'webhook:ping';

export const webhookStatuses = ['enabled', 'disabled'] as const;
export type WebhookStatus = (typeof webhookStatuses)[number];

const webhookFields = {
  name: z.string().trim().min(1, 'Must not be empty').max(200, 'At most 200 characters'),
  /** Checked by the webhooks context against the destination rules (https to a public address). */
  url: z.string().min(1, 'Must not be empty').max(2000, 'At most 2000 characters'),
  events: z
    .array(
      z.enum(webhookEventTypes, {
        error: `Must be one of ${webhookEventTypes.join(', ')} (GET /webhooks/event-types)`,
      }),
    )
    .min(1, 'Must name at least one event type')
    .max(webhookEventTypes.length, `At most ${webhookEventTypes.length} event types`)
    .refine((events) => new Set(events).size === events.length, 'Must not name an event type twice'),
  /** Told when the webhook is disabled after repeated failures. */
  notify_email: z.email({ error: 'Must be an e-mail address' }).max(320, 'At most 320 characters').optional(),
  status: z.enum(webhookStatuses, { error: 'Must be enabled or disabled' }),
};

/** `status` defaults to enabled. */
export const createWebhookBody = z.strictObject({
  ...webhookFields,
  status: webhookFields.status.default('enabled'),
});
export type CreateWebhookBody = z.output<typeof createWebhookBody>;

/** An update replaces every field but `status`, which stays as it is unless named. */
export const updateWebhookBody = z.strictObject({
  ...webhookFields,
  status: webhookFields.status.optional(),
});
export type UpdateWebhookBody = z.output<typeof updateWebhookBody>;

export const webhookSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  status: z.enum(webhookStatuses),
  name: z.string(),
  url: z.string(),
  notify_email: z.string().optional(),
  events: z.array(z.string()),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type WebhookResponse = z.output<typeof webhookSchema>;

/** The tenant's current signing secret (Standard Webhooks `whsec_…`): what receivers verify with. */
export const webhookSigningKeySchema = z.object({
  key: z.string().describe('The signing secret: `whsec_` and 32 bytes in base64.'),
});

/** A queued test delivery (`webhook:ping`), under its delivery id (`webhook-id` header). */
export const webhookPingSchema = z.object({ delivery_id: z.string() });

export const webhookDeliveryStatuses = ['succeeded', 'retrying', 'failed', 'gone'] as const;

/** One delivery as the history keeps it: its outcome, never its body. */
export const webhookDeliverySchema = z.object({
  id: z.string().describe('The delivery id: the `webhook-id` header, the same on every attempt.'),
  webhook_id: uuid,
  event_id: z.string(),
  event_type: z.string().describe('The webhook event type (`token:created`, `webhook:ping`).'),
  status: z.enum(webhookDeliveryStatuses),
  attempts: z.number().int(),
  response_status: z.number().int().optional().describe('The receiver’s last answer, if it answered.'),
  error: z.string().optional().describe('Why the last attempt failed, when the receiver did not answer.'),
  created_at: timestamp,
  last_attempt_at: timestamp,
});
export type WebhookDeliveryResponse = z.output<typeof webhookDeliverySchema>;
