import { describe, expect, it } from 'vitest';
import { fixedClock, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import type { EventMetadata } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { streams, type TenancyEvent } from '../domain/tenancy.events.ts';
import { MemberCommands } from './members.commands.ts';
import { TenantCommands } from './tenants.commands.ts';

const tenantId = '2f7a9c13-0000-4000-8000-000000000001';
const ownerId = '2f7a9c13-0000-4000-8000-000000000002';
const memberId = '2f7a9c13-0000-4000-8000-000000000003';
const adminUserId = '2f7a9c13-0000-4000-8000-000000000004';
const now = '2026-03-01T00:00:00.000Z';
const earlier = '2026-02-01T00:00:00.000Z';
const correlationId = 'request-1';
const owner = testPrincipal(tenantId, ownerId, [], { actorType: 'user' });
const metadata: EventMetadata = {
  tenant_id: tenantId,
  actor_id: ownerId,
  actor_type: 'user',
  correlation_id: correlationId,
};

/** Tenant and member handlers on an in-memory store holding the tenant and one ADMIN member. */
async function given() {
  const store = new InMemoryEventStore();
  const history: [string, TenancyEvent][] = [
    [
      streams.tenant(tenantId),
      {
        type: 'TenantCreated',
        data: {
          tenant_id: tenantId,
          name: 'Acme',
          owner_id: ownerId,
          settings: { deduplicate_tokens: 'false' },
          created_by: ownerId,
          created_at: earlier,
        },
      },
    ],
    [
      streams.member(tenantId, memberId),
      {
        type: 'MemberAdded',
        data: {
          member_id: memberId,
          tenant_id: tenantId,
          user_id: adminUserId,
          role: 'ADMIN',
          created_by: adminUserId,
          created_at: earlier,
        },
      },
    ],
  ];
  for (const [stream, event] of history) await store.given(stream, [{ ...event, metadata }]);
  const clock = fixedClock(now);
  return { store, tenants: new TenantCommands(store, clock), members: new MemberCommands(store, clock) };
}

describe('TenantCommands and MemberCommands against an in-memory event store', () => {
  it('update: appends TenantUpdated with the new name and settings', async () => {
    const { store, tenants } = await given();
    const { tenant } = await tenants.update(
      owner,
      { name: 'Acme Corp', settings: { deduplicate_tokens: 'true' } },
      correlationId,
    );
    expect(tenant).toMatchObject({ name: 'Acme Corp', settings: { deduplicate_tokens: 'true' } });
    expect((await storedEvents(store, streams.tenant(tenantId))).at(-1)).toEqual({
      type: 'TenantUpdated',
      data: {
        tenant_id: tenantId,
        name: 'Acme Corp',
        settings: { deduplicate_tokens: 'true' },
        modified_by: ownerId,
        modified_at: now,
      },
      metadata,
    });
  });

  it('delete: appends TenantDeleted; after it the tenant answers 404', async () => {
    const { store, tenants } = await given();
    await tenants.delete(owner, correlationId);
    expect((await storedEvents(store, streams.tenant(tenantId))).at(-1)).toEqual({
      type: 'TenantDeleted',
      data: { tenant_id: tenantId, deleted_by: ownerId, deleted_at: now },
      metadata,
    });
    await expect(tenants.update(owner, { name: 'Again' }, correlationId)).rejects.toSatisfy(problemWith(404));
  });

  it('remove a member: appends MemberRemoved; a member of no stream is a 404', async () => {
    const { store, members } = await given();
    await members.remove(owner, memberId, correlationId);
    expect((await storedEvents(store, streams.member(tenantId, memberId))).at(-1)).toEqual({
      type: 'MemberRemoved',
      data: {
        member_id: memberId,
        tenant_id: tenantId,
        user_id: adminUserId,
        removed_by: ownerId,
        removed_at: now,
      },
      metadata,
    });
    const unknown = '2f7a9c13-0000-4000-8000-000000000099';
    await expect(members.remove(owner, unknown, correlationId)).rejects.toSatisfy(problemWith(404));
  });
});
