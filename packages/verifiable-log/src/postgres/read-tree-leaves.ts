import type { Queryable } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';

/** One covered event: the tree head that covers it, its leaf index there, its place and hash. */
export interface TreeLeafRow {
  event_id: string;
  tree_head_number: number;
  leaf_index: number;
  position: Position;
  event_hash: Buffer;
}

export interface TreeLeafDbRow {
  event_id: string;
  tree_head_number: string;
  leaf_index: number;
  commit_position: string;
  global_position: string;
  event_hash: Buffer;
}

export const toTreeLeaf = (row: TreeLeafDbRow): TreeLeafRow => ({
  event_id: row.event_id,
  tree_head_number: Number(row.tree_head_number),
  leaf_index: row.leaf_index,
  position: { commit: row.commit_position, prepare: row.global_position },
  event_hash: row.event_hash,
});

export const treeLeafColumns =
  'event_id::text AS event_id, tree_head_number::text AS tree_head_number, leaf_index, commit_position, global_position, event_hash';

/** Leaves after (tree head, leaf index), in chain order: what verify-log compares the log with. */
export async function readTreeLeaves(
  db: Queryable,
  after: { treeHead: number; index: number },
  limit: number,
): Promise<TreeLeafRow[]> {
  const { rows } = await db.query<TreeLeafDbRow>({
    name: 'log_read_tree_leaves',
    text: `SELECT ${treeLeafColumns} FROM log_tree_leaves e WHERE (e.tree_head_number, e.leaf_index) > ($1, $2)
           ORDER BY e.tree_head_number, e.leaf_index LIMIT $3`,
    values: [after.treeHead, after.index, limit],
  });
  return rows.map(toTreeLeaf);
}
