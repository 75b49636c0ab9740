import { createHash } from 'node:crypto';
import type { RecordedEvent } from '@tokenvault/eventstore';

/**
 * Canonical JSON (RFC 8785, JCS, for the JSON values events hold): object keys sorted by their
 * UTF-16 code units, no whitespace, strings and numbers as JSON.stringify writes them. The same
 * value gives the same bytes whichever store returned it and in whatever key order.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no non-finite numbers');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item: unknown) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  if (typeof value === 'object') {
    if (value instanceof Date) return JSON.stringify(value.toISOString());
    const record = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${canonicalJson(item)}`);
    }
    return `{${parts.join(',')}}`;
  }
  throw new TypeError(`canonical JSON has no ${typeof value}`);
}

export const sha256 = (bytes: string | Buffer): Buffer => createHash('sha256').update(bytes).digest();

/**
 * What a seal covers of an event: everything but its position. The data enters through the
 * SHA-256 of its canonical JSON, so that a proof can show the event without its data (which is
 * ciphertext for token values, but may be an e-mail address for a user).
 */
export interface SealedEventEncoding {
  event_id: string;
  stream: string;
  revision: number;
  type: string;
  data_sha256: string;
  metadata: unknown;
  /** ISO 8601 with milliseconds, UTC. */
  created_at: string;
}

export function sealedEncodingOf(event: RecordedEvent): SealedEventEncoding {
  return {
    event_id: event.event_id,
    stream: event.stream,
    revision: event.revision,
    type: event.type,
    data_sha256: sha256(canonicalJson(event.data)).toString('hex'),
    metadata: event.metadata,
    created_at: event.created_at.toISOString(),
  };
}

const leafPrefix = Buffer.from([0]);

/** RFC 9162's leaf hash: SHA-256(0x00 || canonical JSON of the encoding). */
export function leafHashOf(encoding: SealedEventEncoding): Buffer {
  return createHash('sha256').update(leafPrefix).update(canonicalJson(encoding)).digest();
}

/** The event's hash: what its seal's Merkle tree has as its leaf. */
export const eventHashOf = (event: RecordedEvent): Buffer => leafHashOf(sealedEncodingOf(event));
