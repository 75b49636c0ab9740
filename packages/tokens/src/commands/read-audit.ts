import type { EventStore, NewEvent } from '@tokenvault/eventstore';
import type { Clock, Principal } from '@tokenvault/platform';
import type { AccessTransform, TokenType } from '@tokenvault/contracts';
import {
  maxTokensPerRead,
  maxTokensPerReadBatch,
  readsTenantId,
  tokenReadsStream,
  type TokenReadRecord,
  type TokensReadBatchEvent,
} from '../domain/tokens.events.ts';

interface PendingBatch {
  reads: TokenReadRecord[];
  settle: { resolve(): void; reject(error: unknown): void }[];
}

/** Appends in flight at once, each to its own reads stream. */
const shards = 4;

/**
 * Records reads of token data before the data leaves the service (group commit): the reads of
 * every tenant that arrive in one turn of the event loop, or while all `shards` appends are busy,
 * become one TokensReadBatch (a few when they name more than maxTokensPerReadBatch tokens) in
 * one append, and each caller goes on when that append commits. A burst of reads costs a few
 * events, not one per read.
 */
export class ReadAuditor {
  private pending: PendingBatch | null = null;
  private readonly busyShards = new Set<number>();

  private readonly store: EventStore;
  private readonly clock: Clock;
  constructor(store: EventStore, clock: Clock) {
    this.store = store;
    this.clock = clock;
  }

  record(
    principal: Principal,
    reads: readonly { tokenId: string; type: TokenType; createdAt: Date; transform?: AccessTransform }[],
    correlationId: string,
  ): Promise<void> {
    if (reads.length === 0) return Promise.resolve();
    const readAt = this.clock.now().toISOString();
    return new Promise((resolve, reject) => {
      if (!this.pending) {
        this.pending = { reads: [], settle: [] };
        // The reads of the rest of this turn (other requests parsed alongside) join the batch.
        setImmediate(() => this.dispatch());
      }
      for (let from = 0; from < reads.length; from += maxTokensPerRead) {
        this.pending.reads.push({
          tenant_id: principal.tenantId,
          tokens: reads.slice(from, from + maxTokensPerRead).map((read) => ({
            token_id: read.tokenId,
            type: read.type,
            created_at: read.createdAt.toISOString(),
            ...(read.transform === undefined || read.transform === 'reveal'
              ? {}
              : { transform: read.transform }),
          })),
          read_by: principal.actorId,
          reader_type: principal.actorType,
          correlation_id: correlationId,
          read_at: readAt,
        });
      }
      this.pending.settle.push({ resolve, reject });
    });
  }

  private dispatch(): void {
    const batch = this.pending;
    if (!batch) return;
    const shard = Array.from({ length: shards }, (_, index) => index).find(
      (index) => !this.busyShards.has(index),
    );
    // All busy: the batch grows until an append ends and dispatches it.
    if (shard === undefined) return;
    this.pending = null;
    this.busyShards.add(shard);
    this.store
      .append(tokenReadsStream(shard), eventsOf(batch.reads), { expectedRevision: 'any' })
      .then(
        () => batch.settle.forEach((caller) => caller.resolve()),
        (error: unknown) => batch.settle.forEach((caller) => caller.reject(error)),
      )
      .finally(() => {
        this.busyShards.delete(shard);
        this.dispatch();
      });
  }
}

/** The batch's events: its reads in order, each event naming at most maxTokensPerReadBatch tokens. */
function eventsOf(reads: readonly TokenReadRecord[]): NewEvent[] {
  const events: NewEvent[] = [];
  let current: TokenReadRecord[] = [];
  let tokens = 0;
  const close = () => {
    const event: TokensReadBatchEvent = { type: 'TokensReadBatch', data: { reads: current } };
    // No tenant's: the reads name theirs (and their readers and requests).
    events.push({ ...event, metadata: { tenant_id: readsTenantId, actor_type: 'system' } });
  };
  for (const read of reads) {
    if (tokens + read.tokens.length > maxTokensPerReadBatch) {
      close();
      current = [];
      tokens = 0;
    }
    current.push(read);
    tokens += read.tokens.length;
  }
  close();
  return events;
}
