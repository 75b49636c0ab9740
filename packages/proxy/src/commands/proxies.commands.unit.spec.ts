import { describe, expect, it } from 'vitest';
import type { EventOf } from '@tokenvault/cqrs';
import { fixedClock, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import type { EventMetadata } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { proxyBody } from '@tokenvault/contracts';
import { AddressAllowlist, type ResolvedAddress } from '@tokenvault/destinations';
import { streams, type ProxiesEvent } from '../domain/proxy.events.ts';
import { ProxyCommands } from './proxies.commands.ts';

const tenantId = '7c1e0a2b-0000-4000-8000-000000000001';
const actorId = '7c1e0a2b-0000-4000-8000-000000000002';
const proxyId = '7c1e0a2b-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';
const correlationId = 'request-1';
const principal = testPrincipal(tenantId, actorId, ['proxy:create', 'proxy:update', 'proxy:delete']);
const metadata: EventMetadata = {
  tenant_id: tenantId,
  actor_id: actorId,
  actor_type: 'application',
  correlation_id: correlationId,
};

/** The handler with what it depends on: an in-memory store, a vault that names what it sealed, a fixed DNS answer. */
async function given(history: EventOf<ProxiesEvent, 'ProxyCreated'>[] = [], answer = '93.184.216.34') {
  const store = new InMemoryEventStore();
  for (const event of history) {
    await store.given(streams.proxy(tenantId, event.data.proxy_id), [{ ...event, metadata }]);
  }
  const commands = new ProxyCommands({
    store,
    applications: { getMany: async () => [] },
    vault: { encrypt: async (_tenant, subject) => `sealed:${subject}` },
    clock: fixedClock(now),
    allowlist: new AddressAllowlist(''),
    resolver: async (): Promise<ResolvedAddress[]> => [{ address: answer, family: 4 }],
  });
  return { store, commands };
}

const created: EventOf<ProxiesEvent, 'ProxyCreated'> = {
  type: 'ProxyCreated',
  data: {
    proxy_id: proxyId,
    tenant_id: tenantId,
    name: 'Stripe',
    destination_url: 'https://api.example.com/v1',
    request_transforms: [],
    response_transforms: [],
    configuration_ciphertext: `sealed:proxy/${proxyId}/configuration`,
    key_ciphertext: `sealed:proxy/${proxyId}/key`,
    key_hash: 'hash',
    require_auth: true,
    created_by: actorId,
    created_at: '2026-02-01T00:00:00.000Z',
  },
};

const body = proxyBody.parse({
  name: 'Stripe',
  destination_url: 'https://api.example.com/v1',
  configuration: { secret: 's3cr3t' },
});

describe('ProxyCommands against an in-memory event store', () => {
  it('create: appends ProxyCreated with the configuration and key sealed, as the caller, at the clock’s time', async () => {
    const { store, commands } = await given();
    const { row, position } = await commands.create(principal, body, correlationId);
    expect(position).not.toBeNull();
    expect(await storedEvents(store, streams.proxy(tenantId, row.id))).toEqual([
      {
        type: 'ProxyCreated',
        data: {
          proxy_id: row.id,
          tenant_id: tenantId,
          name: 'Stripe',
          destination_url: 'https://api.example.com/v1',
          request_transforms: [],
          response_transforms: [],
          configuration_ciphertext: `sealed:proxy/${row.id}/configuration`,
          key_ciphertext: `sealed:proxy/${row.id}/key`,
          key_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
          require_auth: true,
          created_by: actorId,
          created_at: now,
        },
        metadata,
      },
    ]);
  });

  it('create: a destination that resolves to a private address is a 400, and nothing is appended', async () => {
    const { store, commands } = await given([], '10.0.0.7');
    await expect(commands.create(principal, body, correlationId)).rejects.toSatisfy(
      problemWith(400, 'body.destination_url'),
    );
    expect(await store.headPosition()).toBeUndefined();
  });

  it('patch: changes the fields named and keeps the others', async () => {
    const { store, commands } = await given([created]);
    const { row } = await commands.patch(principal, proxyId, { name: 'Renamed' }, correlationId);
    expect(row.name).toBe('Renamed');
    expect((await storedEvents(store, streams.proxy(tenantId, proxyId))).at(-1)).toEqual({
      type: 'ProxyUpdated',
      data: {
        proxy_id: proxyId,
        tenant_id: tenantId,
        name: 'Renamed',
        destination_url: 'https://api.example.com/v1',
        request_transforms: [],
        response_transforms: [],
        configuration_ciphertext: created.data.configuration_ciphertext,
        require_auth: true,
        modified_by: actorId,
        modified_at: now,
      },
      metadata,
    });
  });

  it('update: a proxy that does not exist is a 404, and nothing is appended', async () => {
    const { store, commands } = await given();
    await expect(commands.update(principal, proxyId, body, correlationId)).rejects.toSatisfy(
      problemWith(404),
    );
    expect(await store.headPosition()).toBeUndefined();
  });

  it('delete: appends ProxyDeleted; a second delete is a 404', async () => {
    const { store, commands } = await given([created]);
    await commands.delete(principal, proxyId, correlationId);
    expect((await storedEvents(store, streams.proxy(tenantId, proxyId))).at(-1)).toEqual({
      type: 'ProxyDeleted',
      data: { proxy_id: proxyId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
      metadata,
    });
    await expect(commands.delete(principal, proxyId, correlationId)).rejects.toSatisfy(problemWith(404));
  });
});
