import type { Queryable } from '@tokenvault/platform';
import type { TreeHead } from '../tree-head.ts';
import { treeHeadColumns, toTreeHead, type TreeHeadRow } from './tree-head-row.ts';

/** Tree heads from `fromNumber` on, in chain order. */
export async function readTreeHeads(db: Queryable, fromNumber: number, limit: number): Promise<TreeHead[]> {
  const { rows } = await db.query<TreeHeadRow>({
    name: 'log_read_tree_heads',
    text: `SELECT ${treeHeadColumns} FROM log_tree_heads h WHERE h.number >= $1 ORDER BY h.number LIMIT $2`,
    values: [fromNumber, limit],
  });
  return rows.map(toTreeHead);
}
