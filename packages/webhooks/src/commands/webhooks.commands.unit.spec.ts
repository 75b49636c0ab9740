import { describe, expect, it } from 'vitest';
import type { EventOf } from '@tokenvault/cqrs';
import { fixedClock, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import { createWebhookBody, updateWebhookBody } from '@tokenvault/contracts';
import { AddressAllowlist, type ResolvedAddress } from '@tokenvault/destinations';
import type { EventMetadata } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { streams, type WebhooksEvent } from '../domain/webhooks.events.ts';
import { WebhookCommands } from './webhooks.commands.ts';

const tenantId = '5b1f0a1e-0000-4000-8000-000000000011';
const actorId = '5b1f0a1e-0000-4000-8000-000000000012';
const webhookId = '5b1f0a1e-0000-4000-8000-000000000013';
const now = '2026-03-01T00:00:00.000Z';
const correlationId = 'request-1';
const principal = testPrincipal(tenantId, actorId, [
  'webhook:create',
  'webhook:update',
  'webhook:delete',
  // What subscribing to each event type needs (subscriptionNotHeld).
  'token:read',
  'application:read',
  'reactor:read',
  'proxy:read',
]);
const metadata: EventMetadata = {
  tenant_id: tenantId,
  actor_id: actorId,
  actor_type: 'application',
  correlation_id: correlationId,
};

/** The handler on an in-memory store, with a fixed DNS answer for every name. */
async function given(history: EventOf<WebhooksEvent, 'WebhookCreated'>[] = [], answer = '93.184.216.34') {
  const store = new InMemoryEventStore();
  for (const event of history) {
    await store.given(streams.webhook(tenantId, event.data.webhook_id), [{ ...event, metadata }]);
  }
  const commands = new WebhookCommands({
    store,
    clock: fixedClock(now),
    webhookAllowlist: new AddressAllowlist(''),
    resolver: async (): Promise<ResolvedAddress[]> => [{ address: answer, family: 4 }],
  });
  return { store, commands };
}

const created: EventOf<WebhooksEvent, 'WebhookCreated'> = {
  type: 'WebhookCreated',
  data: {
    webhook_id: webhookId,
    tenant_id: tenantId,
    name: 'Orders',
    url: 'https://hooks.example.com/in',
    events: ['token:created'],
    status: 'disabled',
    created_by: actorId,
    created_at: '2026-02-01T00:00:00.000Z',
  },
};

const body = createWebhookBody.parse({
  name: 'Orders',
  url: 'https://hooks.example.com/in',
  events: ['token:created', 'token:deleted'],
  notify_email: 'ops@example.com',
});

describe('WebhookCommands against an in-memory event store', () => {
  it('create: appends WebhookCreated, enabled, as the caller, at the clock’s time', async () => {
    const { store, commands } = await given();
    const { row, position } = await commands.create(principal, body, correlationId);
    expect(position).not.toBeNull();
    expect(await storedEvents(store, streams.webhook(tenantId, row.id))).toEqual([
      {
        type: 'WebhookCreated',
        data: {
          webhook_id: row.id,
          tenant_id: tenantId,
          name: 'Orders',
          url: 'https://hooks.example.com/in',
          events: ['token:created', 'token:deleted'],
          notify_email: 'ops@example.com',
          status: 'enabled',
          created_by: actorId,
          created_at: now,
        },
        metadata,
      },
    ]);
  });

  it.each([
    ['a name that resolves to a private address', 'https://hooks.example.com/in', '10.0.0.7'],
    ['a loopback address', 'https://127.0.0.1/in', '93.184.216.34'],
    ['plain http to a public address', 'http://hooks.example.com/in', '93.184.216.34'],
    ['credentials in the URL', 'https://user:pass@hooks.example.com/in', '93.184.216.34'],
    ['not a URL', 'hooks.example.com', '93.184.216.34'],
  ])('create: %s is a 400 naming body.url, and nothing is appended', async (_case, url, answer) => {
    const { store, commands } = await given([], answer);
    await expect(commands.create(principal, { ...body, url }, correlationId)).rejects.toSatisfy(
      problemWith(400, 'body.url'),
    );
    expect(await store.headPosition()).toBeUndefined();
  });

  it('update: replaces the settings and keeps the status unless the body names it', async () => {
    const { store, commands } = await given([created]);
    const update = updateWebhookBody.parse({
      name: 'Renamed',
      url: 'https://hooks.example.com/v2',
      events: ['token:updated'],
    });
    const { row } = await commands.update(principal, webhookId, update, correlationId);
    expect(row).toMatchObject({ name: 'Renamed', status: 'disabled', events: ['token:updated'] });
    await commands.update(principal, webhookId, { ...update, status: 'enabled' }, correlationId);
    const events = await storedEvents(store, streams.webhook(tenantId, webhookId));
    expect(events.map((event) => (event.data as { status: string }).status)).toEqual([
      'disabled',
      'disabled',
      'enabled',
    ]);
  });

  it('update: a webhook that does not exist is a 404 before the URL is resolved, and nothing is appended', async () => {
    const { store, commands } = await given([], '10.0.0.7');
    const update = updateWebhookBody.parse({
      name: 'X',
      url: 'https://hooks.example.com/',
      events: ['token:created'],
    });
    await expect(commands.update(principal, webhookId, update, correlationId)).rejects.toSatisfy(
      problemWith(404),
    );
    expect(await store.headPosition()).toBeUndefined();
  });

  it('delete: appends WebhookDeleted; a second delete is a 404', async () => {
    const { store, commands } = await given([created]);
    await commands.delete(principal, webhookId, correlationId);
    expect((await storedEvents(store, streams.webhook(tenantId, webhookId))).at(-1)).toEqual({
      type: 'WebhookDeleted',
      data: { webhook_id: webhookId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
      metadata,
    });
    await expect(commands.delete(principal, webhookId, correlationId)).rejects.toSatisfy(problemWith(404));
  });
});
