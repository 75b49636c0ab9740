import type { Queryable } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';

export interface SealedEventRow {
  event_id: string;
  seal_number: number;
  leaf_index: number;
  position: Position;
  event_hash: Buffer;
}

export interface SealedEventDbRow {
  event_id: string;
  seal_number: string;
  leaf_index: number;
  commit_position: string;
  global_position: string;
  event_hash: Buffer;
}

export const toSealedEvent = (row: SealedEventDbRow): SealedEventRow => ({
  event_id: row.event_id,
  seal_number: Number(row.seal_number),
  leaf_index: row.leaf_index,
  position: { commit: row.commit_position, prepare: row.global_position },
  event_hash: row.event_hash,
});

export const sealedEventColumns =
  'event_id::text AS event_id, seal_number::text AS seal_number, leaf_index, commit_position, global_position, event_hash';

/** Sealed events after (seal, leaf index), in chain order: what verify-log compares the log with. */
export async function readSealedEvents(
  db: Queryable,
  after: { seal: number; index: number },
  limit: number,
): Promise<SealedEventRow[]> {
  const { rows } = await db.query<SealedEventDbRow>({
    name: 'log_read_sealed_events',
    text: `SELECT ${sealedEventColumns} FROM log_sealed_events e WHERE (e.seal_number, e.leaf_index) > ($1, $2)
           ORDER BY e.seal_number, e.leaf_index LIMIT $3`,
    values: [after.seal, after.index, limit],
  });
  return rows.map(toSealedEvent);
}
