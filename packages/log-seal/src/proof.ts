import type { Queryable } from '@tokenvault/platform';
import type { EventStore, Position } from '@tokenvault/eventstore';
import type { LogProof } from '@tokenvault/contracts';
import { leafHashOf, sealedEncodingOf } from './canonical.ts';
import { inclusionPath } from './merkle.ts';
import { findSealedEvent } from './postgres/find-sealed-event.ts';
import { readSeals } from './postgres/read-seals.ts';
import { readSealLeaves } from './postgres/read-seal-leaves.ts';

export type ProofOutcome =
  | { kind: 'proof'; proof: LogProof }
  /** The event is not sealed yet (the sealer lags behind the log). */
  | { kind: 'unsealed' }
  /** The event store no longer holds the event as sealed: the log was tampered with. */
  | { kind: 'mismatch' };

/**
 * The inclusion proof of one event: the event as sealed (its data only as a hash), its Merkle
 * path (hashes of other events' subtrees, never their content) and its seal. The event is read
 * through the event store port, as it is now: a proof of an altered event does not verify.
 */
export async function buildProof(
  db: Queryable,
  store: EventStore,
  eventId: string,
  logId: string,
): Promise<ProofOutcome> {
  const sealed = await findSealedEvent(db, eventId);
  if (!sealed) return { kind: 'unsealed' };
  const [seal] = await readSeals(db, sealed.seal_number, 1);
  if (seal?.number !== sealed.seal_number) return { kind: 'mismatch' };
  const leaves = await readSealLeaves(db, seal.number);
  // The event right after the one before it in the seal (or the previous seal's last).
  let before: Position | undefined = leaves[sealed.leaf_index - 1]?.position;
  if (!before && seal.number > 1) before = (await readSeals(db, seal.number - 1, 1))[0]?.last_position;
  const [event] = await store.readAll({ ...(before ? { after: before } : {}), limit: 1 });
  if (event?.event_id !== eventId) return { kind: 'mismatch' };
  const encoding = sealedEncodingOf(event);
  return {
    kind: 'proof',
    proof: {
      log_id: logId,
      event: { ...encoding, metadata: { ...event.metadata } },
      event_hash: leafHashOf(encoding).toString('hex'),
      global_position: sealed.position.prepare,
      leaf_index: sealed.leaf_index,
      merkle_path: inclusionPath(
        leaves.map((leaf) => leaf.event_hash),
        sealed.leaf_index,
      ).map((hash) => hash.toString('hex')),
      seal,
    },
  };
}
