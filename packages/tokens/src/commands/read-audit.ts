import type { EventStore, NewEvent } from '@tokenvault/eventstore';
import { metadataOf } from '@tokenvault/cqrs';
import type { Principal } from '@tokenvault/platform';
import type { TokenType } from '@tokenvault/contracts';
import { tokenReadsStream, type TokenReadEvent } from '../domain/token.ts';

interface PendingBatch {
  events: NewEvent[];
  settle: { resolve(): void; reject(error: unknown): void }[];
}

/**
 * Appends read-audit events before token data leaves the service. Reads of one tenant that
 * arrive while an append is in flight are coalesced into the next append (group commit), so a
 * burst of reads costs one round trip per batch, not one per read.
 */
export class ReadAuditor {
  private readonly pending = new Map<string, PendingBatch>();
  private readonly appending = new Set<string>();

  constructor(private readonly store: EventStore) {}

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
      if (!this.appending.has(tenantId)) this.flush(tenantId);
    });
  }

  private flush(tenantId: string): void {
    const batch = this.pending.get(tenantId);
    if (!batch) return;
    this.pending.delete(tenantId);
    this.send(tenantId, batch);
  }

  private send(tenantId: string, batch: PendingBatch): void {
    this.appending.add(tenantId);
    this.store
      .append(tokenReadsStream(tenantId), batch.events, { expectedRevision: 'any' })
      .then(
        () => batch.settle.forEach((caller) => caller.resolve()),
        (error: unknown) => batch.settle.forEach((caller) => caller.reject(error)),
      )
      .finally(() => {
        this.appending.delete(tenantId);
        this.flush(tenantId);
      });
  }
}
