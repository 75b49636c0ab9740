import { notifyInvalidation, type EventOf } from '@tokenvault/cqrs';
import type { InlineProjection } from '@tokenvault/eventstore';
import type { WebhooksEvent } from '../domain/webhooks.events.ts';

/** The signing secrets of this tenant a sender keeps in memory are stale once this commits. */
export const signingKeysOfTenant = (tenantId: string) => `webhook-signing-keys:${tenantId}`;

/**
 * The cache keys an event makes stale: announced at the append's commit (every process), and a
 * process that appended the event itself tells its own caches at once.
 */
export function webhooksInvalidationsOf(event: { type: string; data: unknown }): string[] {
  const tenantId = (event.data as { tenant_id?: string }).tenant_id;
  return event.type === 'WebhookSigningKeyRotated' && tenantId ? [signingKeysOfTenant(tenantId)] : [];
}

/**
 * A rotation is announced as part of the write, in either projection mode: the senders drop the
 * tenant's kept secrets at its commit, so the new secret signs from the next attempt on (a ping
 * sent right after the rotation included). Not a read model: the event store runs it with every
 * append of the event.
 */
export const signingKeyRotationNotice: InlineProjection<EventOf<WebhooksEvent, 'WebhookSigningKeyRotated'>> =
  {
    handles: ['WebhookSigningKeyRotated'],
    async apply(events, tx) {
      for (const event of events) {
        for (const key of webhooksInvalidationsOf(event)) await notifyInvalidation(tx, key);
      }
    },
  };
