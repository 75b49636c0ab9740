// The message the relay publishes for an event: the CloudEvents 1.0 envelope holding only the
// public data its allow-list entry (events.ts) names.
import { z } from 'zod';
import { publicEvents, publishedInParts, type EventTopic } from './public-events.ts';

/** The CloudEvents 1.0 structured-mode JSON envelope of every message value. */
export const cloudEventSchema = z.object({
  specversion: z.literal('1.0'),
  /** The event-store event id: the same on a redelivery, so consumers can drop duplicates. */
  id: z.string(),
  source: z.string(),
  /** `tokenvault.<topic>.<EventType>`, e.g. `tokenvault.tokens.TokenCreated`. */
  type: z.string(),
  /** The entity id, the same as the Kafka key. */
  subject: z.string(),
  time: z.string(),
  datacontenttype: z.literal('application/json'),
  /** Extension attributes. */
  tenantid: z.string(),
  entitytype: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type CloudEvent = z.infer<typeof cloudEventSchema>;

export const cloudEventType = (topic: EventTopic, eventType: string) => `tokenvault.${topic}.${eventType}`;

export class UnpublishableEventError extends Error {
  readonly eventType: string;
  constructor(eventType: string) {
    super(`event type ${eventType} has no entry in publicEvents: it is never published`);
    this.eventType = eventType;
    this.name = 'UnpublishableEventError';
  }
}

export interface PublishableEvent {
  event_id: string;
  type: string;
  data: unknown;
  metadata: { tenant_id: string };
  created_at: Date | string;
}

/**
 * The message for one event: its topic (without prefix), key and CloudEvents envelope holding
 * only the public data. Throws for an event type without an entry, or data that does not fit it.
 */
export function toPublicMessage(event: PublishableEvent): {
  topic: EventTopic;
  key: string;
  value: CloudEvent;
} {
  const entry = publicEvents[event.type];
  if (!entry) throw new UnpublishableEventError(event.type);
  const data = entry.schema.parse(event.data);
  const subject = entry.entityId(data);
  return {
    topic: entry.topic,
    key: subject,
    value: {
      specversion: '1.0',
      id: event.event_id,
      source: `/tokenvault/${entry.topic}`,
      type: cloudEventType(entry.topic, event.type),
      subject,
      time: new Date(event.created_at).toISOString(),
      datacontenttype: 'application/json',
      tenantid: event.metadata.tenant_id,
      entitytype: entry.entity,
      data,
    },
  };
}

/**
 * The messages of one event: its own, or one per part for an event that records the facts of
 * several tenants (publishedInParts), each part's id `<event id>/<index>` (the same on a
 * redelivery) and its tenant its own.
 */
export function toPublicMessages(event: PublishableEvent): ReturnType<typeof toPublicMessage>[] {
  const parts = publishedInParts[event.type];
  if (!parts) return [toPublicMessage(event)];
  return parts(event.data).map((part, index) =>
    toPublicMessage({
      event_id: `${event.event_id}/${index}`,
      type: part.type,
      data: part.data,
      metadata: { tenant_id: part.tenant_id },
      created_at: event.created_at,
    }),
  );
}
