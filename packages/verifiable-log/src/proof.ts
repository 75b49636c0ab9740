import type { Queryable } from '@tokenvault/platform';
import type { EventStore, Position } from '@tokenvault/eventstore';
import type { LogProof } from '@tokenvault/contracts';
import { leafHashOf, loggedEncodingOf } from './canonical.ts';
import { inclusionPath } from './merkle.ts';
import { findTreeLeaf } from './postgres/find-tree-leaf.ts';
import { readTreeHeads } from './postgres/read-tree-heads.ts';
import { readLeafHashes } from './postgres/read-leaf-hashes.ts';

export type ProofOutcome =
  | { kind: 'proof'; proof: LogProof }
  /** No tree head covers the event yet (the signer lags behind the log). */
  | { kind: 'not-covered-yet' }
  /** The event store no longer holds the event as its tree head covers it: the log was tampered with. */
  | { kind: 'mismatch' };

/**
 * The inclusion proof of one event: the event as logged (its data only as a hash), its Merkle
 * path (hashes of other events' subtrees, never their content) and its tree head. The event is
 * read through the event store port, as it is now: a proof of an altered event does not verify.
 */
export async function buildProof(
  db: Queryable,
  store: EventStore,
  eventId: string,
  logId: string,
): Promise<ProofOutcome> {
  const leaf = await findTreeLeaf(db, eventId);
  if (!leaf) return { kind: 'not-covered-yet' };
  const [treeHead] = await readTreeHeads(db, leaf.tree_head_number, 1);
  if (treeHead?.number !== leaf.tree_head_number) return { kind: 'mismatch' };
  const leaves = await readLeafHashes(db, treeHead.number);
  // The event right after the one before it in the tree (or the previous tree head's last).
  let before: Position | undefined = leaves[leaf.leaf_index - 1]?.position;
  if (!before && treeHead.number > 1)
    before = (await readTreeHeads(db, treeHead.number - 1, 1))[0]?.last_position;
  const [event] = await store.readAll({ ...(before ? { after: before } : {}), limit: 1 });
  if (event?.event_id !== eventId) return { kind: 'mismatch' };
  const encoding = loggedEncodingOf(event);
  return {
    kind: 'proof',
    proof: {
      log_id: logId,
      event: { ...encoding, metadata: { ...event.metadata } },
      event_hash: leafHashOf(encoding).toString('hex'),
      global_position: leaf.position.prepare,
      leaf_index: leaf.leaf_index,
      merkle_path: inclusionPath(
        leaves.map((hash) => hash.event_hash),
        leaf.leaf_index,
      ).map((hash) => hash.toString('hex')),
      tree_head: treeHead,
    },
  };
}
