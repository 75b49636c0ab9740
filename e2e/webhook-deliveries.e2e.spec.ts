// Deliveries end to end: the service delivers to an HTTPS receiver on loopback (its certificate
// made by this test, trusted through WEBHOOK_CA_FILE), which verifies each signature with the
// SDK's verifyWebhook, fails on purpose, and finally answers 410.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { verifyWebhook } from '@tokenvault/sdk';
import {
  makeCertificate,
  startHttpsDestination,
  type Received,
  type TestDestination,
} from './support/destinations.ts';
import { useStack } from './support/stack.ts';

interface Delivery {
  id: string;
  type: string;
  timestamp: string;
  tenant_id: string;
  webhook_id: string;
  data: Record<string, unknown>;
}

const certificate = makeCertificate();

describe('webhook deliveries to an HTTPS receiver', () => {
  const env = useStack({
    WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_BACKOFF_MS: '200',
    WEBHOOK_ATTEMPTS: '4',
  });
  let receiver: TestDestination;
  let secret: string;

  beforeAll(async () => {
    receiver = await startHttpsDestination(certificate);
  });
  afterAll(async () => {
    await receiver?.close();
    certificate.cleanup();
  });

  /** What the receiver got on `path`, each verified as a receiver would (throws when one is not). */
  const verified = async (path: string): Promise<{ id: string; delivery: Delivery; request: Received }[]> =>
    Promise.all(
      receiver.received
        .filter((request) => request.url === path)
        .map(async (request) => {
          const body = request.body.toString('utf8');
          const id = await verifyWebhook({ secrets: secret, headers: request.headers, body });
          return { id, delivery: JSON.parse(body) as Delivery, request };
        }),
    );

  const subscribe = async (path: string, events: string[]) => {
    const created = await env.tenant.client.request<{ id: string }>('POST', '/webhooks', {
      body: { name: path, url: `${receiver.url}${path}`, events },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = await env.tenant.client.request<{ key: string }>('GET', '/webhooks/signing-key');
    secret = key.body.key;
    return created.body.id;
  };

  it('delivers a token’s creation, signed: the SDK verifier accepts it, and refuses it altered', async () => {
    const webhookId = await subscribe('/created', ['token:created']);
    const token = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'token', data: 'delivered' },
    });
    const [first] = await eventually(async () => {
      const got = await verified('/created');
      expect(got).toHaveLength(1);
      return got;
    }, 30_000);
    expect(first!.id).toMatch(new RegExp(`^${webhookId}\\.`));
    expect(first!.delivery).toMatchObject({
      type: 'token:created',
      tenant_id: env.tenant.tenantId,
      webhook_id: webhookId,
      data: { token_id: token.body.id, type: 'token' },
    });
    await expect(
      verifyWebhook({
        secrets: secret,
        headers: first!.request.headers,
        body: first!.request.body.toString('utf8').replace('token:created', 'token:deleted'),
      }),
    ).rejects.toThrow('no signature matches');
    const history = await env.tenant.client.request<{ data: { status: string; attempts: number }[] }>(
      'GET',
      `/webhooks/${webhookId}/deliveries`,
    );
    expect(history.body.data).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
  });

  it('a ping is delivered signed; after a rotation both the new and the old secret verify', async () => {
    const webhookId = await subscribe('/ping', ['token:deleted']);
    const before = secret;
    const rotated = await env.tenant.client.request<{ key: string }>('POST', '/webhooks/signing-key/rotate');
    expect(rotated.status).toBe(200);
    secret = rotated.body.key;
    const ping = await env.tenant.client.request<{ delivery_id: string }>(
      'POST',
      `/webhooks/${webhookId}/ping`,
    );
    expect(ping.status).toBe(202);
    const [delivered] = await eventually(async () => {
      const got = await verified('/ping');
      expect(got).toHaveLength(1);
      return got;
    }, 30_000);
    expect(delivered!.id).toBe(ping.body.delivery_id);
    expect(delivered!.delivery.type).toBe('webhook:ping');
    const { headers, body } = delivered!.request;
    await expect(verifyWebhook({ secrets: before, headers, body: body.toString('utf8') })).resolves.toBe(
      ping.body.delivery_id,
    );
  });

  it('failures are retried under the same id; a 410 then disables the webhook and nothing more is sent', async () => {
    let answered = 0;
    // The other webhooks (token:created too) keep getting 200s.
    receiver.answer((request, res) => {
      if (request.url === '/failing') answered++;
      res.writeHead(request.url !== '/failing' ? 200 : answered < 3 ? 500 : 410);
      res.end();
    });
    const webhookId = await subscribe('/failing', ['token:created']);
    await env.tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'failing' } });
    await eventually(async () => {
      const webhook = await env.tenant.client.request<{ status: string }>('GET', `/webhooks/${webhookId}`);
      expect(webhook.body.status).toBe('disabled');
    }, 30_000);
    const attempts = await verified('/failing');
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((attempt) => attempt.id)).size).toBe(1);
    const history = await env.tenant.client.request<{ data: { status: string; attempts: number }[] }>(
      'GET',
      `/webhooks/${webhookId}/deliveries`,
    );
    expect(history.body.data).toMatchObject([{ status: 'gone', attempts: 3 }]);
    await env.tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'after 410' } });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await verified('/failing')).toHaveLength(3);
  });
});
