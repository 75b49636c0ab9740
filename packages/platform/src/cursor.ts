import { badRequest } from './errors.ts';

/**
 * The one cursor of newest-first lists (`?start=` from `pagination.next`): base64url of the JSON
 * `[created_at, key]` of the last row of a page, where `key` breaks ties between rows of the same
 * millisecond (the audit log's position, a token's id). The next page is the rows strictly after
 * it in `ORDER BY created_at DESC, key DESC`.
 */
export interface Cursor<Key> {
  /** toISOString's form: milliseconds, UTC. */
  createdAt: string;
  key: Key;
}

/** toISOString's form, years 1000–9999: no list holds anything outside them. */
const cursorInstant = /^[1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const encodeCursor = (createdAt: Date, key: string | number) =>
  Buffer.from(JSON.stringify([createdAt.toISOString(), key])).toString('base64url');

/**
 * Only exactly what encodeCursor writes, with a key `isKey` accepts: a forged cursor must not
 * reach PostgreSQL with a date it cannot hold or a value of another type. A 400 on `query.start`.
 */
export function decodeCursor<Key>(value: string, isKey: (key: unknown) => key is Key): Cursor<Key> {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  if (Array.isArray(decoded) && decoded.length === 2) {
    const [createdAt, key] = decoded as unknown[];
    if (
      typeof createdAt === 'string' &&
      cursorInstant.test(createdAt) &&
      // Also refuses dates that do not exist (2026-02-30), which Date would roll over.
      !Number.isNaN(Date.parse(createdAt)) &&
      new Date(createdAt).toISOString() === createdAt &&
      isKey(key)
    ) {
      return { createdAt, key };
    }
  }
  throw badRequest('The cursor is not one this service gave out.', { 'query.start': ['Invalid cursor'] });
}
