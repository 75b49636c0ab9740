import type { Queryable } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';

export interface LeafHash {
  event_hash: Buffer;
  position: Position;
}

/** The event hashes of one tree head in leaf order: the Merkle tree a proof's path comes from. */
export async function readLeafHashes(db: Queryable, treeHeadNumber: number): Promise<LeafHash[]> {
  const { rows } = await db.query<{ event_hash: Buffer; commit_position: string; global_position: string }>({
    name: 'log_read_leaf_hashes',
    text: `SELECT event_hash, commit_position, global_position FROM log_tree_leaves
           WHERE tree_head_number = $1 ORDER BY leaf_index`,
    values: [treeHeadNumber],
  });
  return rows.map((row) => ({
    event_hash: row.event_hash,
    position: { commit: row.commit_position, prepare: row.global_position },
  }));
}
