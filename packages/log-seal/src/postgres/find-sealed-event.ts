import type { Queryable } from '@tokenvault/platform';
import {
  sealedEventColumns,
  toSealedEvent,
  type SealedEventDbRow,
  type SealedEventRow,
} from './read-sealed-events.ts';

/** Where one event was sealed, if it was. */
export async function findSealedEvent(db: Queryable, eventId: string): Promise<SealedEventRow | undefined> {
  const { rows } = await db.query<SealedEventDbRow>({
    name: 'log_find_sealed_event',
    text: `SELECT ${sealedEventColumns} FROM log_sealed_events WHERE event_id = $1`,
    values: [eventId],
  });
  return rows[0] && toSealedEvent(rows[0]);
}
