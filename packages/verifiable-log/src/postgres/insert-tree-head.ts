import type { Queryable } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';
import type { TreeHead } from '../tree-head.ts';

/** One event a new tree head covers: a leaf of its Merkle tree. */
export interface NewTreeLeaf {
  event_id: string;
  position: Position;
  tenant_id: string | null;
  event_hash: Buffer;
}

/** A tree head and its events' hashes, in one statement (in the processor's transaction). */
export async function insertTreeHead(
  db: Queryable,
  treeHead: TreeHead,
  leaves: readonly NewTreeLeaf[],
): Promise<void> {
  await db.query({
    name: 'log_insert_tree_head',
    text: `WITH head AS (
             INSERT INTO log_tree_heads (number, previous_hash, first_commit_position, first_global_position,
               last_commit_position, last_global_position, event_count, merkle_root, signed_at, tree_head_hash,
               signature, key_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             RETURNING number)
           INSERT INTO log_tree_leaves (event_id, tree_head_number, leaf_index, commit_position, global_position,
             tenant_id, event_hash)
           SELECT e.event_id, head.number, e.ordinality - 1, e.commit_position, e.global_position, e.tenant_id,
             e.event_hash
           FROM head, unnest($13::uuid[], $14::text[], $15::text[], $16::uuid[], $17::bytea[])
             WITH ORDINALITY AS e(event_id, commit_position, global_position, tenant_id, event_hash, ordinality)`,
    values: [
      treeHead.number,
      treeHead.previous_hash,
      treeHead.first_position.commit,
      treeHead.first_position.prepare,
      treeHead.last_position.commit,
      treeHead.last_position.prepare,
      treeHead.event_count,
      treeHead.merkle_root,
      treeHead.signed_at,
      treeHead.tree_head_hash,
      treeHead.signature ?? null,
      treeHead.key_id ?? null,
      leaves.map((leaf) => leaf.event_id),
      leaves.map((leaf) => leaf.position.commit),
      leaves.map((leaf) => leaf.position.prepare),
      leaves.map((leaf) => leaf.tenant_id),
      leaves.map((leaf) => leaf.event_hash),
    ],
  });
}
