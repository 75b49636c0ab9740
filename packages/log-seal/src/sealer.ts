import type { Logger, Pool, PoolClient } from '@tokenvault/platform';
import type { EventStore, RecordedEvent } from '@tokenvault/eventstore';
import { Processor, type BatchHandler } from '@tokenvault/cqrs';
import { eventHashOf } from './canonical.ts';
import { merkleRoot } from './merkle.ts';
import { genesisHash, sealHashOf, type Seal, type SealContent, type SealSigner } from './seal.ts';
import { readLastSeal } from './postgres/last-seal.ts';
import { insertSeal } from './postgres/insert-seal.ts';

/** The checkpoint of the sealing processor. */
export const logSealerName = 'log-sealer';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The next seal over a batch of events that follows `previous` (or starts the chain). Pure but for
 * the clock and the signature: the sealer and the tests build seals with it.
 */
export function sealBatch(
  events: readonly RecordedEvent[],
  previous: Pick<Seal, 'number' | 'seal_hash'> | undefined,
  sealedAt: Date,
  signer?: SealSigner,
): { seal: Seal; hashes: Buffer[] } {
  const first = events[0];
  const last = events.at(-1);
  if (!first || !last) throw new RangeError('a seal covers at least one event');
  const hashes = events.map(eventHashOf);
  const content: SealContent = {
    number: (previous?.number ?? 0) + 1,
    previous_hash: previous?.seal_hash ?? genesisHash,
    first_position: first.position,
    last_position: last.position,
    event_count: events.length,
    merkle_root: merkleRoot(hashes).toString('hex'),
    sealed_at: sealedAt.toISOString(),
  };
  const seal: Seal = {
    ...content,
    seal_hash: sealHashOf(content),
    ...(signer ? { signature: signer.sign(content), key_id: signer.keyId } : {}),
  };
  return { seal, hashes };
}

/**
 * Seals each batch the processor hands it: the seal, its events' hashes and the checkpoint commit
 * in one transaction, so a crash leaves neither a gap nor a batch sealed twice.
 */
export function logSealHandler(options: { signer?: SealSigner; now?: () => Date }): BatchHandler {
  const now = options.now ?? (() => new Date());
  return {
    async handle(events: readonly RecordedEvent[], tx: PoolClient) {
      if (events.length === 0) return;
      const previous = await readLastSeal(tx);
      const { seal, hashes } = sealBatch(events, previous, now(), options.signer);
      await insertSeal(
        tx,
        seal,
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

/** The sealing processor: one more handler of the one Processor, over every stream. */
export function createLogSealer(options: {
  store: EventStore;
  pool: Pool;
  logger: Logger;
  batchSize: number;
  /** Shortest time between two seals (fewer, larger seals under load). */
  intervalMs: number;
  signer?: SealSigner;
}): Processor {
  return new Processor({
    name: logSealerName,
    store: options.store,
    pool: options.pool,
    logger: options.logger,
    batchSize: options.batchSize,
    batchWindowMs: options.intervalMs,
    handler: logSealHandler(options.signer ? { signer: options.signer } : {}),
  });
}
