import type { FieldErrors } from '@tokenvault/platform';

/** What a subscriber holds: its tenant-wide permissions and its key's expiry (absent: never, or a member). */
export interface Subscriber {
  permissions: ReadonlySet<string>;
  keyExpiresAt?: string;
}

/** The permission that reads an event type's resource tenant-wide: `token:created` → `token:read`. */
export const readPermissionOf = (eventType: string) => `${eventType.slice(0, eventType.indexOf(':'))}:read`;

/**
 * Why a subscriber may not subscribe a webhook to `events` (undefined: it may). A webhook is a
 * standing grant: it delivers every event of its types to its URL, after the key that made it is
 * gone. So no key subscribes to what it could not read (each event type needs the permission that
 * reads its resource tenant-wide, `body.events`), and a key that expires makes no webhook, which
 * would outlive it (`body.url`).
 */
export function subscriptionNotHeld(
  subscriber: Subscriber,
  events: readonly string[],
): FieldErrors | undefined {
  const unread = events.filter((event) => !subscriber.permissions.has(readPermissionOf(event)));
  const errors: FieldErrors = {};
  if (unread.length > 0) {
    errors['body.events'] = unread.map(
      (event) => `${event} needs ${readPermissionOf(event)} held tenant-wide, which this key does not hold`,
    );
  }
  if (subscriber.keyExpiresAt !== undefined) {
    errors['body.url'] = [
      `This key expires (${subscriber.keyExpiresAt}) and a webhook does not: only a key without an expiry, or a member, may create or change one`,
    ];
  }
  return Object.keys(errors).length > 0 ? errors : undefined;
}
