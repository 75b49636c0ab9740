import type { Queryable } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';

export interface SealLeaf {
  event_hash: Buffer;
  position: Position;
}

/** The event hashes of one seal in leaf order: the Merkle tree a proof's path comes from. */
export async function readSealLeaves(db: Queryable, sealNumber: number): Promise<SealLeaf[]> {
  const { rows } = await db.query<{ event_hash: Buffer; commit_position: string; global_position: string }>({
    name: 'log_read_seal_leaves',
    text: `SELECT event_hash, commit_position, global_position FROM log_sealed_events
           WHERE seal_number = $1 ORDER BY leaf_index`,
    values: [sealNumber],
  });
  return rows.map((row) => ({
    event_hash: row.event_hash,
    position: { commit: row.commit_position, prepare: row.global_position },
  }));
}
