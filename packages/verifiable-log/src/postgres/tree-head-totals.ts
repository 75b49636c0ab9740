import type { Queryable } from '@tokenvault/platform';

/** How many tree heads and covered events there are from a tree head on: verify-log's progress total. */
export async function readTreeHeadTotals(
  db: Queryable,
  fromNumber: number,
): Promise<{ treeHeads: number; events: number }> {
  const { rows } = await db.query<{ tree_heads: string; events: string }>({
    name: 'log_tree_head_totals',
    text: `SELECT count(*)::text AS tree_heads, coalesce(sum(event_count), 0)::text AS events
           FROM log_tree_heads WHERE number >= $1`,
    values: [fromNumber],
  });
  return { treeHeads: Number(rows[0]?.tree_heads ?? 0), events: Number(rows[0]?.events ?? 0) };
}
