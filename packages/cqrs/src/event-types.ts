import type { DomainEvent } from './decider.ts';

/**
 * The member of an event union with this type (or these types):
 * `EventOf<TokenEvent, 'TokenCreated'>`. Every context names its events' members with it.
 */
export type EventOf<E extends DomainEvent, Type extends E['type']> = Extract<E, { type: Type }>;

/** The data of the member of an event union with this type: `DataOf<TokenEvent, 'TokenCreated'>`. */
export type DataOf<E extends DomainEvent, Type extends E['type']> = EventOf<E, Type>['data'];

/**
 * TenantDeleted as every context's read models see it: the tenant whose rows go (tenancy appends
 * it, with more data; see onTenantDeleted). A projection of another context handles it as a member
 * of its event union, without importing tenancy.
 */
export type TenantDeletedEvent = DomainEvent<'TenantDeleted', { tenant_id: string }>;
