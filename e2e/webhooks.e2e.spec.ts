import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

interface Webhook {
  id: string;
  tenant_id: string;
  status: 'enabled' | 'disabled';
  name: string;
  url: string;
  notify_email?: string;
  events: string[];
  created_by?: string;
  created_at?: string;
  modified_by?: string;
  modified_at?: string;
}
interface Problem {
  status: number;
  errors?: Record<string, string[]>;
}

describe('webhooks: /webhooks', () => {
  // 127.0.0.1 is the operator's allow-listed internal receiver (plain http is allowed to it only).
  const env = useStack({ WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  const client = () => env.tenant.client;
  const webhook = { name: 'Orders', url: 'http://127.0.0.1:9/hooks', events: ['token:created'] };

  it('creates, reads, lists, disables, re-enables and deletes a webhook', async () => {
    const created = await client().request<Webhook>('POST', '/webhooks', {
      body: { ...webhook, notify_email: 'ops@example.com' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      tenant_id: env.tenant.tenantId,
      status: 'enabled',
      name: 'Orders',
      url: 'http://127.0.0.1:9/hooks',
      notify_email: 'ops@example.com',
      events: ['token:created'],
    });
    const id = created.body.id;
    expect((await client().request<Webhook>('GET', `/webhooks/${id}`)).body).toEqual(created.body);
    const listed = await client().request<{ data: Webhook[] }>('GET', '/webhooks');
    expect(listed.body.data.map((item) => item.id)).toContain(id);
    const disabled = await client().request<Webhook>('PUT', `/webhooks/${id}`, {
      body: { ...webhook, events: ['token:created', 'token:deleted'], status: 'disabled' },
    });
    expect(disabled.body).toMatchObject({ status: 'disabled', events: ['token:created', 'token:deleted'] });
    const enabled = await client().request<Webhook>('PUT', `/webhooks/${id}`, {
      body: { ...webhook, status: 'enabled' },
    });
    expect(enabled.body).toMatchObject({ status: 'enabled', events: ['token:created'] });
    expect((await client().request('DELETE', `/webhooks/${id}`)).status).toBe(204);
    expect((await client().request('GET', `/webhooks/${id}`)).status).toBe(404);
  });

  it('lists the event types and answers GET /ping', async () => {
    const types = await client().request<string[]>('GET', '/webhooks/event-types');
    expect(types.status).toBe(200);
    expect(types.body).toEqual(expect.arrayContaining(['token:created', 'token:updated', 'token:deleted']));
    expect((await client().request('GET', '/ping')).status).toBe(204);
  });

  it('refuses an unknown event type, a private receiver not allow-listed and plain http to a public one, naming the field', async () => {
    for (const [body, field] of [
      [{ ...webhook, events: ['token:exploded'] }, 'body.events.0'],
      [{ ...webhook, url: 'https://10.0.0.1/hooks' }, 'body.url'],
      [{ ...webhook, url: 'http://93.184.216.34/hooks' }, 'body.url'],
    ] as const) {
      const response = await client().request<Problem>('POST', '/webhooks', { body });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.errors ?? {})).toEqual([field]);
    }
  });

  it('another tenant never sees nor changes a webhook', async () => {
    const created = await client().request<Webhook>('POST', '/webhooks', { body: webhook });
    const other = await env.stack.createTenant();
    expect((await other.client.request('GET', `/webhooks/${created.body.id}`)).status).toBe(404);
    expect(
      (await other.client.request('PUT', `/webhooks/${created.body.id}`, { body: webhook })).status,
    ).toBe(404);
    expect((await other.client.request('DELETE', `/webhooks/${created.body.id}`)).status).toBe(404);
    expect((await other.client.request<{ data: Webhook[] }>('GET', '/webhooks')).body.data).toEqual([]);
    expect((await client().request('GET', `/webhooks/${created.body.id}`)).status).toBe(200);
  });
});
