import type { Queryable } from '@tokenvault/platform';
import type { TreeHead } from '../tree-head.ts';
import { treeHeadColumns, toTreeHead, type TreeHeadRow } from './tree-head-row.ts';

/** The newest tree head: the chain continues from it. */
export async function readLastTreeHead(db: Queryable): Promise<TreeHead | undefined> {
  const { rows } = await db.query<TreeHeadRow>({
    name: 'log_last_tree_head',
    text: `SELECT ${treeHeadColumns} FROM log_tree_heads h ORDER BY h.number DESC LIMIT 1`,
  });
  return rows[0] && toTreeHead(rows[0]);
}
