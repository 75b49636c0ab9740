import type { Seal } from '../seal.ts';

export const sealColumns = `number::text AS number, previous_hash, first_commit_position, first_global_position,
  last_commit_position, last_global_position, event_count, merkle_root, sealed_at, seal_hash, signature, key_id`;

export interface SealRow {
  number: string;
  previous_hash: string;
  first_commit_position: string;
  first_global_position: string;
  last_commit_position: string;
  last_global_position: string;
  event_count: number;
  merkle_root: string;
  sealed_at: Date;
  seal_hash: string;
  signature: string | null;
  key_id: string | null;
}

export function toSeal(row: SealRow): Seal {
  return {
    number: Number(row.number),
    previous_hash: row.previous_hash,
    first_position: { commit: row.first_commit_position, prepare: row.first_global_position },
    last_position: { commit: row.last_commit_position, prepare: row.last_global_position },
    event_count: row.event_count,
    merkle_root: row.merkle_root,
    sealed_at: row.sealed_at.toISOString(),
    seal_hash: row.seal_hash,
    ...(row.signature ? { signature: row.signature } : {}),
    ...(row.key_id ? { key_id: row.key_id } : {}),
  };
}
