import type { TreeHead } from '../tree-head.ts';

export const treeHeadColumns = `number::text AS number, previous_hash, first_commit_position, first_global_position,
  last_commit_position, last_global_position, event_count, merkle_root, signed_at, tree_head_hash, signature, key_id`;

export interface TreeHeadRow {
  number: string;
  previous_hash: string;
  first_commit_position: string;
  first_global_position: string;
  last_commit_position: string;
  last_global_position: string;
  event_count: number;
  merkle_root: string;
  signed_at: Date;
  tree_head_hash: string;
  signature: string | null;
  key_id: string | null;
}

export function toTreeHead(row: TreeHeadRow): TreeHead {
  return {
    number: Number(row.number),
    previous_hash: row.previous_hash,
    first_position: { commit: row.first_commit_position, prepare: row.first_global_position },
    last_position: { commit: row.last_commit_position, prepare: row.last_global_position },
    event_count: row.event_count,
    merkle_root: row.merkle_root,
    signed_at: row.signed_at.toISOString(),
    tree_head_hash: row.tree_head_hash,
    ...(row.signature ? { signature: row.signature } : {}),
    ...(row.key_id ? { key_id: row.key_id } : {}),
  };
}
