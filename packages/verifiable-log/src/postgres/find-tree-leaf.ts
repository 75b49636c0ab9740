import type { Queryable } from '@tokenvault/platform';
import { treeLeafColumns, toTreeLeaf, type TreeLeafDbRow, type TreeLeafRow } from './read-tree-leaves.ts';

/** Where one event is in the tree heads' leaves, if a tree head covers it yet. */
export async function findTreeLeaf(db: Queryable, eventId: string): Promise<TreeLeafRow | undefined> {
  const { rows } = await db.query<TreeLeafDbRow>({
    name: 'log_find_tree_leaf',
    text: `SELECT ${treeLeafColumns} FROM log_tree_leaves WHERE event_id = $1`,
    values: [eventId],
  });
  return rows[0] && toTreeLeaf(rows[0]);
}
