import type { EventStore, NewEvent } from '@tokenvault/eventstore';
import { metadataOf } from '@tokenvault/cqrs';
import type { Clock, Principal } from '@tokenvault/platform';
import type { AccessTransform, TokenType } from '@tokenvault/contracts';
import { maxTokensPerRead, tokenReadsStream, type TokensReadEvent } from '../domain/tokens.events.ts';

interface PendingBatch {
  events: NewEvent[];
  settle: { resolve(): void; reject(error: unknown): void }[];
}

/** Appends in flight at once, each to its own reads stream. */
const shards = 4;

/**
 * Appends read-audit events before token data leaves the service, one TokensRead per request
 * naming every token it read (group commit): up to `shards`
 * appends run at once, and the reads of every tenant that arrive while all are busy go into the
 * next one, so a burst of reads costs a few appends, not one per read or per tenant.
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
    reads: readonly { tokenId: string; type: TokenType; transform?: AccessTransform }[],
    correlationId: string,
  ): Promise<void> {
    if (reads.length === 0) return Promise.resolve();
    const tenantId = principal.tenantId;
    const readAt = this.clock.now().toISOString();
    const metadata = metadataOf(principal, correlationId);
    return new Promise((resolve, reject) => {
      this.pending ??= { events: [], settle: [] };
      for (let from = 0; from < reads.length; from += maxTokensPerRead) {
        const event: TokensReadEvent = {
          type: 'TokensRead',
          data: {
            tenant_id: tenantId,
            tokens: reads.slice(from, from + maxTokensPerRead).map((read) => ({
              token_id: read.tokenId,
              type: read.type,
              ...(read.transform === undefined || read.transform === 'reveal'
                ? {}
                : { transform: read.transform }),
            })),
            read_by: principal.actorId,
            read_at: readAt,
          },
        };
        this.pending.events.push({ ...event, metadata });
      }
      this.pending.settle.push({ resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    const batch = this.pending;
    if (!batch) return;
    const shard = Array.from({ length: shards }, (_, index) => index).find(
      (index) => !this.busyShards.has(index),
    );
    if (shard === undefined) return;
    this.pending = null;
    this.busyShards.add(shard);
    this.store
      .append(tokenReadsStream(shard), batch.events, { expectedRevision: 'any' })
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
