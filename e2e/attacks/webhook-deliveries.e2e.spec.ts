// A tenant's webhook is a way out of the service for its events. An attacker tries to make it
// carry more than the tenant's own public data (another tenant's events, token data, keys,
// e-mail addresses) or to aim it inside the network: a receiver that answers with a redirect to
// an internal address. Each is refused; what the receivers get is read from their side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { useStack, type TestTenant } from '../support/stack.ts';

interface Delivery {
  type: string;
  tenant_id: string;
  data: Record<string, unknown>;
}

describe('attack: webhook deliveries', () => {
  // 127.0.0.1 is the operator's allow-listed internal receiver; 127.0.0.2 is an internal service
  // that is not (any loopback address stands for one).
  const env = useStack({ WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1', WEBHOOK_BACKOFF_MS: '200' });
  let mine: TestDestination;
  let theirs: TestDestination;
  let internal: TestDestination;
  let redirecting: TestDestination;
  let other: TestTenant;

  beforeAll(async () => {
    [mine, theirs, redirecting] = await Promise.all([
      startHttpDestination(),
      startHttpDestination(),
      startHttpDestination(),
    ]);
    internal = await startHttpDestination('127.0.0.2');
    other = await env.stack.createTenant('Other tenant');
  });
  afterAll(async () => {
    await Promise.all([mine, theirs, redirecting, internal].map((destination) => destination?.close()));
  });

  const subscribe = async (tenant: TestTenant, url: string, events: string[]) => {
    const created = await tenant.client.request<{ id: string }>('POST', '/webhooks', {
      body: { name: 'Receiver', url, events },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id;
  };
  const deliveries = (destination: TestDestination) =>
    destination.received.map((request) => JSON.parse(request.body.toString('utf8')) as Delivery);

  it('another tenant’s events never reach my webhook, and mine never reach theirs', async () => {
    await subscribe(env.tenant, `${mine.url}/mine`, ['token:created']);
    await subscribe(other, `${theirs.url}/theirs`, ['token:created']);
    const otherToken = await other.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'token', data: 'theirs' },
    });
    const myToken = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'token', data: 'mine' },
    });
    // Mine came (so deliveries run); theirs came to them.
    await eventually(async () => {
      expect(deliveries(mine).map((delivery) => delivery.data.token_id)).toContain(myToken.body.id);
      expect(deliveries(theirs).map((delivery) => delivery.data.token_id)).toContain(otherToken.body.id);
    }, 30_000);
    expect(deliveries(mine).every((delivery) => delivery.tenant_id === env.tenant.tenantId)).toBe(true);
    expect(deliveries(mine).map((delivery) => delivery.data.token_id)).not.toContain(otherToken.body.id);
    expect(deliveries(theirs).every((delivery) => delivery.tenant_id === other.tenantId)).toBe(true);
    expect(deliveries(theirs).map((delivery) => delivery.data.token_id)).not.toContain(myToken.body.id);
  });

  it('nothing sensitive is in any delivery: no token data, metadata, fingerprint, API key or e-mail', async () => {
    const receiver = await startHttpDestination();
    try {
      await subscribe(env.tenant, `${receiver.url}/all`, [
        'token:created',
        'token:updated',
        'application:created',
      ]);
      const secrets = {
        number: '4242424242424242',
        metadata: 'jane.doe@example.com',
      };
      const token = await env.tenant.client.request<{ id: string; fingerprint?: string }>('POST', '/tokens', {
        body: {
          type: 'card',
          data: { number: secrets.number, expiration_month: 12, expiration_year: 2040 },
          metadata: { customer: secrets.metadata },
        },
      });
      expect(token.status, JSON.stringify(token.body)).toBe(201);
      const updated = await env.tenant.client.request('PATCH', `/tokens/${token.body.id}`, {
        body: { metadata: { customer: secrets.metadata, note: 'updated' } },
      });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      const application = await env.tenant.client.request<{ id: string; key: string }>(
        'POST',
        '/applications',
        {
          body: { name: 'Leaky?', type: 'private', permissions: ['token:read'] },
        },
      );
      expect(application.status, JSON.stringify(application.body)).toBe(201);
      await eventually(async () => {
        expect(
          deliveries(receiver)
            .map((delivery) => delivery.type)
            .sort(),
        ).toEqual(['application:created', 'token:created', 'token:updated']);
      }, 30_000);
      const everything = receiver.received
        .map((request) => JSON.stringify(request.headers) + request.body.toString('utf8'))
        .join('\n');
      for (const secret of [
        secrets.number,
        secrets.metadata,
        application.body.key,
        'data_ciphertext',
        'fingerprint',
      ]) {
        expect(everything).not.toContain(secret);
      }
      const created = deliveries(receiver).find((delivery) => delivery.type === 'token:created')!;
      expect(Object.keys(created.data).sort()).toEqual(
        ['containers', 'created_at', 'created_by', 'tenant_id', 'token_id', 'type'].sort(),
      );
    } finally {
      await receiver.close();
    }
  });

  it('a redirect to an internal address is not followed: the internal service gets nothing', async () => {
    redirecting.answer((_request, res) => {
      res.writeHead(307, { location: `${internal.url}/admin` });
      res.end();
    });
    const webhookId = await subscribe(env.tenant, `${redirecting.url}/hook`, ['token:created']);
    await env.tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'redirected' } });
    await eventually(async () => {
      const history = await env.tenant.client.request<{
        data: { status: string; response_status?: number }[];
      }>('GET', `/webhooks/${webhookId}/deliveries`);
      expect(history.body.data).toMatchObject([{ status: 'retrying', response_status: 307 }]);
    }, 30_000);
    // A few retries come and go: each one redirected, none followed.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(redirecting.received.length).toBeGreaterThanOrEqual(1);
    expect(internal.received).toEqual([]);
  });
});
