// The bulk routes from the attacker's side. A public key (it ships in a browser) tries to turn
// token ids it saw into data with POST /detokenize; a key allowed to create only under /pci/ hides
// a request for another container among good ones in POST /tokenize, hoping the others are
// created (or that its own lands anyway); another tenant's key names this tenant's token ids in
// POST /detokenize. Each is refused whole, and no data or new token comes of it.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useStack, type TestTenant } from '../support/stack.ts';

describe('attack: the bulk routes as a way around a key’s permissions or its tenant', () => {
  const env = useStack();
  const secret = `bulk-secret-${randomBytes(6).toString('hex')}`;
  let tokenId: string;
  let other: TestTenant;

  const keyOf = async (body: object) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', { body });
    expect(created.status).toBe(201);
    return created.body.key;
  };
  /** TokenCreated events carrying this marker in their metadata: what a call left in the store. */
  const createdWith = async (marker: string) => {
    const result = await env.stack.service.runtime.ownerPool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM es_events
        WHERE event_type = 'TokenCreated' AND data->'metadata'->>'marker' = $1`,
      [marker],
    );
    return result.rows[0]!.count;
  };

  beforeAll(async () => {
    const created = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'token', data: secret },
    });
    expect(created.status).toBe(201);
    tokenId = created.body.id;
    other = await env.stack.createTenant('Other Corp');
  });

  it('a public key cannot detokenize: 403, and the answer holds no data', async () => {
    const publicKey = await keyOf({ name: 'browser', type: 'public', permissions: ['token:create'] });
    const response = await env.tenant.client.request('POST', '/detokenize', {
      body: { value: `{{ ${tokenId} }}` },
      apiKey: publicKey,
    });
    expect(response.status).toBe(403);
    expect(JSON.stringify(response.body)).not.toContain(secret);
  });

  it('one request for a container the key lacks refuses the whole tokenize: 403 naming it, no token created', async () => {
    const pciKey = await keyOf({
      name: 'pci loader',
      type: 'private',
      rules: [{ container: '/pci/', permissions: ['token:create'] }],
    });
    const marker = `bulk-attack-${randomBytes(4).toString('hex')}`;
    const response = await env.tenant.client.request<{ detail?: string }>('POST', '/tokenize', {
      body: {
        allowed: [
          { type: 'token', data: 'a', containers: ['/pci/'], metadata: { marker } },
          { type: 'token', data: 'b', containers: ['/pci/high/'], metadata: { marker } },
        ],
        smuggled: { type: 'token', data: 'c', containers: ['/general/'], metadata: { marker } },
      },
      apiKey: pciKey,
    });
    expect(response.status).toBe(403);
    expect(response.body.detail).toContain('body.smuggled');
    expect(await createdWith(marker)).toBe(0);
  });

  it('another tenant’s key naming this tenant’s token gets no data: the token is unknown to it', async () => {
    const response = await other.client.request<{ errors?: object }>('POST', '/detokenize', {
      body: { value: `{{ ${tokenId} }}` },
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body)).not.toContain(secret);
    expect(JSON.stringify(response.body.errors)).toContain(tokenId);
  });
});
