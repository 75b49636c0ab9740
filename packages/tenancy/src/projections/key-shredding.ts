import { notifyInvalidation, type EventOf } from '@tokenvault/cqrs';
import type { InlineProjection } from '@tokenvault/eventstore';
import { destroyTenantKeysWithin } from '@tokenvault/vault';
import type { TenancyEvent } from '../domain/tenancy.events.ts';
import { tenancyInvalidationsOf } from './tenancy.projection.ts';

/**
 * Crypto-shredding as part of the write: the transaction that appends TenantDeleted destroys the
 * tenant's data and fingerprint keys, in either projection mode, so its token data in the event
 * log is unreadable from that commit on. Not a read model (a rebuild has nothing to redo): the
 * event store runs it with every append of the event.
 */
export const tenantKeyShredding: InlineProjection<EventOf<TenancyEvent, 'TenantDeleted'>> = {
  handles: ['TenantDeleted'],
  async apply(events, tx) {
    for (const event of events) {
      await destroyTenantKeysWithin(tx, event.data.tenant_id);
      // Every process forgets the tenant's keys and principals at this commit, whatever the
      // projector is doing (with inline projections the tenancy projection says it again).
      for (const key of tenancyInvalidationsOf(event)) await notifyInvalidation(tx, key);
    }
  },
};
