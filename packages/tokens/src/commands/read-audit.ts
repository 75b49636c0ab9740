import type { EventStore, NewEvent } from '@tokenvault/eventstore';
import { metadataOf } from '@tokenvault/cqrs';
import type { Principal } from '@tokenvault/platform';
import type { TokenType } from '@tokenvault/contracts';
import { tokenReadsStream, type TokenReadEvent } from '../domain/token.ts';

interface PendingBatch {
  events: NewEvent[];
  settle: { resolve(): void; reject(error: unknown): void }[];
}

/** Appends in flight at once for one tenant, each to its own reads stream. */
const shardsPerTenant = 4;

/**
 * Appends read-audit events before token data leaves the service. Up to `shardsPerTenant`
 * appends per tenant run at once; reads that arrive while all are busy are coalesced into the
 * next append (group commit), so a burst of reads costs a few round trips, not one per read.
 */
export class ReadAuditor {
  private readonly pending = new Map<string, PendingBatch>();
  private readonly busyShards = new Map<string, Set<number>>();

  private readonly store: EventStore;
  constructor(store: EventStore) {
    this.store = store;
  }

  record(
    principal: Principal,
    reads: readonly { tokenId: string; type: TokenType }[],
    correlationId: string,
  ): Promise<void> {
    if (reads.length === 0) return Promise.resolve();
    const tenantId = principal.tenantId;
    const readAt = new Date().toISOString();
    const metadata = metadataOf(principal, correlationId);
    return new Promise((resolve, reject) => {
      let batch = this.pending.get(tenantId);
      if (!batch) {
        batch = { events: [], settle: [] };
        this.pending.set(tenantId, batch);
      }
      for (const read of reads) {
        const event: TokenReadEvent = {
          type: 'TokenRead',
          data: {
            token_id: read.tokenId,
            tenant_id: tenantId,
            type: read.type,
            read_by: principal.actorId,
            read_at: readAt,
          },
        };
        batch.events.push({ ...event, metadata });
      }
      batch.settle.push({ resolve, reject });
      this.dispatch(tenantId);
    });
  }

  private dispatch(tenantId: string): void {
    const batch = this.pending.get(tenantId);
    if (!batch) return;
    const busy = this.busyShards.get(tenantId) ?? new Set<number>();
    const shard = Array.from({ length: shardsPerTenant }, (_, index) => index).find(
      (index) => !busy.has(index),
    );
    if (shard === undefined) return;
    this.pending.delete(tenantId);
    busy.add(shard);
    this.busyShards.set(tenantId, busy);
    this.store
      .append(tokenReadsStream(tenantId, shard), batch.events, { expectedRevision: 'any' })
      .then(
        () => batch.settle.forEach((caller) => caller.resolve()),
        (error: unknown) => batch.settle.forEach((caller) => caller.reject(error)),
      )
      .finally(() => {
        busy.delete(shard);
        if (busy.size === 0) this.busyShards.delete(tenantId);
        this.dispatch(tenantId);
      });
  }
}
