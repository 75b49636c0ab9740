import type { Queryable } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';
import type { Seal } from '../seal.ts';

export interface SealedEvent {
  event_id: string;
  position: Position;
  tenant_id: string | null;
  event_hash: Buffer;
}

/** A seal and its events' hashes, in one statement (in the processor's transaction). */
export async function insertSeal(db: Queryable, seal: Seal, events: readonly SealedEvent[]): Promise<void> {
  await db.query({
    name: 'log_insert_seal',
    text: `WITH seal AS (
             INSERT INTO log_seals (number, previous_hash, first_commit_position, first_global_position,
               last_commit_position, last_global_position, event_count, merkle_root, sealed_at, seal_hash,
               signature, key_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             RETURNING number)
           INSERT INTO log_sealed_events (event_id, seal_number, leaf_index, commit_position, global_position,
             tenant_id, event_hash)
           SELECT e.event_id, seal.number, e.ordinality - 1, e.commit_position, e.global_position, e.tenant_id,
             e.event_hash
           FROM seal, unnest($13::uuid[], $14::text[], $15::text[], $16::uuid[], $17::bytea[])
             WITH ORDINALITY AS e(event_id, commit_position, global_position, tenant_id, event_hash, ordinality)`,
    values: [
      seal.number,
      seal.previous_hash,
      seal.first_position.commit,
      seal.first_position.prepare,
      seal.last_position.commit,
      seal.last_position.prepare,
      seal.event_count,
      seal.merkle_root,
      seal.sealed_at,
      seal.seal_hash,
      seal.signature ?? null,
      seal.key_id ?? null,
      events.map((event) => event.event_id),
      events.map((event) => event.position.commit),
      events.map((event) => event.position.prepare),
      events.map((event) => event.tenant_id),
      events.map((event) => event.event_hash),
    ],
  });
}
