// The webhook signing secret signs as the service: whoever holds it can forge deliveries the
// tenant's receivers accept. An attacker with a key that may only read webhooks (a dashboard's,
// a monitoring job's) tries to read the secret, and to forge a delivery with it.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TokenvaultClient, verifyWebhook } from '@tokenvault/sdk';
import { useStack } from '../support/stack.ts';

describe('attack: the webhook signing secret with a read-only key', () => {
  const env = useStack();

  const keyWith = async (permissions: string[]) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name: permissions.join(' '), type: 'private', permissions },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return new TokenvaultClient(env.stack.url, created.body.key);
  };

  it('a webhook:read key gets a 403 and no secret; its webhooks stay readable to it', async () => {
    const secret = await env.tenant.client.request<{ key: string }>('GET', '/webhooks/signing-key');
    expect(secret.status).toBe(200);
    const reader = await keyWith(['webhook:read']);
    const stolen = await reader.request<Record<string, unknown>>('GET', '/webhooks/signing-key');
    expect(stolen.status).toBe(403);
    expect(JSON.stringify(stolen.body)).not.toContain(secret.body.key);
    expect(JSON.stringify(stolen.body)).not.toContain('whsec_');
    expect((await reader.request('GET', '/webhooks')).status).toBe(200);
    // What the secret would have let it do: a forged delivery a receiver accepts.
    const body = JSON.stringify({ id: 'forged', type: 'token:deleted', data: {} });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', Buffer.from(secret.body.key.slice('whsec_'.length), 'base64'))
      .update(`forged.${timestamp}.${body}`)
      .digest('base64');
    const headers = {
      'webhook-id': 'forged',
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${signature}`,
    };
    await expect(verifyWebhook({ secrets: secret.body.key, headers, body })).resolves.toBe('forged');
  });

  it('a webhook:update key gets it, as the owner does', async () => {
    const owner = await env.tenant.client.request<{ key: string }>('GET', '/webhooks/signing-key');
    const updater = await keyWith(['webhook:update']);
    const read = await updater.request<{ key: string }>('GET', '/webhooks/signing-key');
    expect(read.status).toBe(200);
    expect(read.body.key).toBe(owner.body.key);
  });
});
