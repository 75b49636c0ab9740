import type { Logger, Pool, PoolClient } from '@tokenvault/platform';
import type { EventStore, RecordedEvent } from '@tokenvault/eventstore';
import { EventProcessor, type BatchHandler } from '@tokenvault/cqrs';
import { eventHashOf } from './canonical.ts';
import { merkleRoot } from './merkle.ts';
import {
  genesisHash,
  treeHeadHashOf,
  type LogSigningKey,
  type TreeHead,
  type TreeHeadContent,
} from './tree-head.ts';
import { readLastTreeHead } from './postgres/last-tree-head.ts';
import { insertTreeHead } from './postgres/insert-tree-head.ts';

/**
 * The checkpoint of the tree-head signer. Until migration verifiable-log/002_tree_heads it was
 * `log-sealer`: that migration renames the row, so a deployed chain goes on where it stood.
 */
export const treeHeadSignerName = 'log-tree-heads';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The next tree head over a batch of events that follows `previous` (or starts the chain). Pure
 * but for the clock and the signature: the signer and the tests build tree heads with it.
 */
export function nextTreeHead(
  events: readonly RecordedEvent[],
  previous: Pick<TreeHead, 'number' | 'tree_head_hash'> | undefined,
  signedAt: Date,
  signingKey?: LogSigningKey,
): { treeHead: TreeHead; hashes: Buffer[] } {
  const first = events[0];
  const last = events.at(-1);
  if (!first || !last) throw new RangeError('a tree head covers at least one event');
  const hashes = events.map(eventHashOf);
  const content: TreeHeadContent = {
    number: (previous?.number ?? 0) + 1,
    previous_hash: previous?.tree_head_hash ?? genesisHash,
    first_position: first.position,
    last_position: last.position,
    event_count: events.length,
    merkle_root: merkleRoot(hashes).toString('hex'),
    signed_at: signedAt.toISOString(),
  };
  const treeHead: TreeHead = {
    ...content,
    tree_head_hash: treeHeadHashOf(content),
    ...(signingKey ? { signature: signingKey.sign(content), key_id: signingKey.keyId } : {}),
  };
  return { treeHead, hashes };
}

/**
 * Writes a tree head over each batch the processor hands it: the tree head, its events' hashes
 * and the checkpoint commit in one transaction, so a crash leaves neither a gap nor a batch
 * covered twice.
 */
export function treeHeadHandler(options: { signingKey?: LogSigningKey; now?: () => Date }): BatchHandler {
  const now = options.now ?? (() => new Date());
  return {
    async handle(events: readonly RecordedEvent[], tx: PoolClient) {
      if (events.length === 0) return;
      const previous = await readLastTreeHead(tx);
      const { treeHead, hashes } = nextTreeHead(events, previous, now(), options.signingKey);
      await insertTreeHead(
        tx,
        treeHead,
        events.map((event, index) => ({
          event_id: event.event_id,
          position: event.position,
          tenant_id: uuidPattern.test(event.metadata.tenant_id) ? event.metadata.tenant_id : null,
          event_hash: hashes[index]!,
        })),
      );
    },
  };
}

/** The tree-head signer: one more handler of the one EventProcessor, over every stream. */
export function createTreeHeadSigner(options: {
  store: EventStore;
  pool: Pool;
  logger: Logger;
  batchSize: number;
  /** Shortest time between two tree heads (fewer, larger ones under load). */
  intervalMs: number;
  signingKey?: LogSigningKey;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}): EventProcessor {
  return new EventProcessor({
    name: treeHeadSignerName,
    store: options.store,
    pool: options.pool,
    logger: options.logger,
    batchSize: options.batchSize,
    batchWindowMs: options.intervalMs,
    leaseMs: options.leaseMs,
    handler: treeHeadHandler(options.signingKey ? { signingKey: options.signingKey } : {}),
  });
}
