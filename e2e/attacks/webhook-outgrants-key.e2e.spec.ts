// Webhooks from the attacker's side (issue 48, red team round 2, finding R3). The owner gives a
// contractor a key that may only create webhooks (`webhook:create`), or a key that may read
// everything but expires. The contractor subscribes a receiver of their own to token:created and
// application:created: it goes on receiving after the key expired or its application was deleted,
// and its deliveries name tokens (ids, types, containers) the key could not read, and every new
// application with its rules. No key grants more than it holds, and a key's expiry bounds its
// holder: subscribing to an event type needs the permission that reads its resource tenant-wide
// (`token:read` for token events, `application:read`, `reactor:read`, `proxy:read`), and a key
// that expires may not create or change a webhook, which would outlive it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  id: string;
  key: string;
  errors?: Record<string, string[]>;
}

describe('attack: a key subscribes a webhook to more than it reads, or that outlives it', () => {
  const env = useStack({ WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1', LOG_LEVEL: 'warn' });
  let receiver: TestDestination;
  beforeAll(async () => {
    receiver = await startHttpDestination();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const keyOf = async (name: string, permissions: string[], expiresInMs?: number) => {
    const created = await env.tenant.client.request<Answer>('POST', '/applications', {
      body: { name, type: 'management', permissions },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    if (expiresInMs === undefined) return created.body.key;
    const key = await env.tenant.client.request<Answer>('POST', `/applications/${created.body.id}/keys`, {
      body: { expires_at: new Date(Date.now() + expiresInMs).toISOString() },
    });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    return key.body.key;
  };
  const subscribe = (apiKey: string, events: string[]) =>
    env.tenant.client.withKey(apiKey).request<Answer>('POST', '/webhooks', {
      body: { name: 'Contractor', url: `${receiver.url}/hook`, events },
    });
  const webhookCount = async () =>
    (await env.tenant.client.request<{ data: unknown[] }>('GET', '/webhooks', { query: { size: 100 } })).body
      .data.length;

  it('a key holding only webhook:create cannot subscribe to token and application events (403 naming body.events)', async () => {
    const before = await webhookCount();
    const refused = await subscribe(await keyOf('Webhooks only', ['webhook:create']), [
      'token:created',
      'application:created',
    ]);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.events']);
    const reasons = refused.body.errors!['body.events']!.join(' ');
    expect(reasons).toContain('token:read');
    expect(reasons).toContain('application:read');
    expect(await webhookCount()).toBe(before);
  });

  it('a key that expires cannot create a webhook, even reading every resource (403 naming body.url)', async () => {
    const expiring = await keyOf(
      'Everything, for 90 s',
      ['webhook:create', 'token:read', 'application:read'],
      90_000,
    );
    const refused = await subscribe(expiring, ['token:created', 'application:created']);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.url']);
    expect(refused.body.errors!['body.url']!.join(' ')).toMatch(/expires/);
  });

  it('a key with webhook:update only cannot widen a webhook to events it cannot read (403 naming body.events)', async () => {
    const created = await subscribe(await keyOf('Token reader', ['webhook:create', 'token:read']), [
      'token:created',
    ]);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const updater = env.tenant.client.withKey(
      await keyOf('Webhook updater', ['webhook:update', 'token:read']),
    );
    const widened = await updater.request<Answer>('PUT', `/webhooks/${created.body.id}`, {
      body: {
        name: 'Contractor',
        url: `${receiver.url}/hook`,
        events: ['token:created', 'application:created'],
      },
    });
    expect(widened.status, JSON.stringify(widened.body)).toBe(403);
    expect(Object.keys(widened.body.errors ?? {})).toEqual(['body.events']);
    const renamed = await updater.request<Answer>('PUT', `/webhooks/${created.body.id}`, {
      body: { name: 'Renamed', url: `${receiver.url}/hook`, events: ['token:created'] },
    });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
  });
});
