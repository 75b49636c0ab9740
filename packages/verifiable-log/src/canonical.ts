import { hash } from 'node:crypto';
import type { RecordedEvent } from '@tokenvault/eventstore';

/**
 * Canonical JSON (RFC 8785, JCS, for the JSON values events hold): object keys sorted by their
 * UTF-16 code units, no whitespace, strings and numbers as JSON.stringify writes them. The same
 * value gives the same bytes whichever store returned it and in whatever key order.
 */
export function canonicalJson(value: unknown): string {
  // String concatenation, not arrays and joins: verify-log encodes every event (twice as fast).
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || typeof value === 'boolean') return value === null ? 'null' : String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no non-finite numbers');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      out += (i ? ',' : '') + (item === undefined ? 'null' : canonicalJson(item));
    }
    return `${out}]`;
  }
  if (typeof value === 'object') {
    if (value instanceof Date) return JSON.stringify(value.toISOString());
    const record = value as Record<string, unknown>;
    let out = '{';
    let first = true;
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined) continue;
      out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
      first = false;
    }
    return `${out}}`;
  }
  throw new TypeError(`canonical JSON has no ${typeof value}`);
}

export const sha256 = (bytes: string | Buffer): Buffer => hash('sha256', bytes, 'buffer');

/**
 * What a tree head covers of an event: everything but its position. The data enters through the
 * SHA-256 of its canonical JSON, so that a proof can show the event without its data (which is
 * ciphertext for token values, but may be an e-mail address for a user).
 */
export interface LoggedEventEncoding {
  event_id: string;
  stream: string;
  revision: number;
  type: string;
  data_sha256: string;
  metadata: unknown;
  /** ISO 8601 with milliseconds, UTC. */
  created_at: string;
}

export function loggedEncodingOf(event: RecordedEvent): LoggedEventEncoding {
  return {
    event_id: event.event_id,
    stream: event.stream,
    revision: event.revision,
    type: event.type,
    data_sha256: hash('sha256', canonicalJson(event.data), 'hex'),
    metadata: event.metadata,
    created_at: event.created_at.toISOString(),
  };
}

/** RFC 9162's leaf hash: SHA-256(0x00 || canonical JSON of the encoding); U+0000 is the byte 0x00 in UTF-8. */
export function leafHashOf(encoding: LoggedEventEncoding): Buffer {
  return sha256(`\u0000${canonicalJson(encoding)}`);
}

/**
 * The event's hash: what its tree head's Merkle tree has as its leaf. The same bytes as
 * leafHashOf(loggedEncodingOf(event)), written out in the encoding's key order without building
 * the object (verify-log hashes every event).
 */
export function eventHashOf(event: RecordedEvent): Buffer {
  const encoding =
    `{"created_at":${JSON.stringify(event.created_at.toISOString())}` +
    `,"data_sha256":"${hash('sha256', canonicalJson(event.data), 'hex')}"` +
    `,"event_id":${JSON.stringify(event.event_id)}` +
    `,"metadata":${canonicalJson(event.metadata)}` +
    `,"revision":${canonicalJson(event.revision)}` +
    `,"stream":${JSON.stringify(event.stream)}` +
    `,"type":${JSON.stringify(event.type)}}`;
  return sha256(`\u0000${encoding}`);
}
