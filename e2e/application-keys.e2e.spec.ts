import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenvaultClient } from '@tokenvault/sdk';
import { TestClock } from './support/clock.ts';
import { startStack, useStack, type TestStack, type TestTenant } from './support/stack.ts';

interface Key {
  id: string;
  tenant_id: string;
  application_id: string;
  expires_at?: string;
  created_by?: string;
  created_at?: string;
  key?: string;
}

const status = async (client: TokenvaultClient) => (await client.request('GET', '/applications/key')).status;

describe('application keys', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const api = () => env.tenant.client;
  const createApplication = async (permissions: string[] = ['token:create', 'token:read']) => {
    const created = await api().request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'Backend', type: 'private', permissions },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const createKey = async (applicationId: string, body?: { expires_at: string }) => {
    const created = await api().request<Key & { key: string }>(
      'POST',
      `/applications/${applicationId}/keys`,
      {
        ...(body ? { body } : {}),
      },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const keysOf = async (applicationId: string) => {
    const listed = await api().request<Key[]>('GET', `/applications/${applicationId}/keys`);
    expect(listed.status).toBe(200);
    return listed.body;
  };

  it('gives an application several keys, each working as it; lists them without the keys; a deleted one is a 401 at once, the others go on', async () => {
    const application = await createApplication();
    const second = await createKey(application.id);
    expect(second.key).toMatch(/^tv_prv_[A-Za-z0-9_-]{43}$/);
    expect(second).toMatchObject({
      tenant_id: env.tenant.tenantId,
      application_id: application.id,
      created_by: env.tenant.applicationId,
      created_at: expect.any(String),
    });
    const first = api().withKey(application.key);
    const other = api().withKey(second.key);
    for (const client of [first, other]) {
      const own = await client.request<{ id: string }>('GET', '/applications/key');
      expect(own.body.id).toBe(application.id);
      expect((await client.request('POST', '/tokens', { body: { data: 'x' } })).status).toBe(201);
    }
    // The first key's id is the application's own; the keys themselves are never shown again.
    const listed = await keysOf(application.id);
    expect(listed.map((key) => key.id)).toEqual([application.id, second.id]);
    const { key: _shown, ...secondWithoutKey } = second;
    expect(listed[1]).toEqual(secondWithoutKey);
    const one = await api().request<Key>('GET', `/applications/${application.id}/keys/${second.id}`);
    expect(one.body).toEqual(secondWithoutKey);
    expect(JSON.stringify([listed, one.body])).not.toContain(second.key);
    expect(JSON.stringify(listed)).not.toContain(application.key);

    const deleted = await api().request('DELETE', `/applications/${application.id}/keys/${application.id}`);
    expect(deleted.status).toBe(204);
    expect(await status(first)).toBe(401);
    expect(await status(other)).toBe(200);
    expect((await keysOf(application.id)).map((key) => key.id)).toEqual([second.id]);
    const again = await api().request('DELETE', `/applications/${application.id}/keys/${application.id}`);
    expect(again.status).toBe(404);
  });

  it('deleting the application deletes every key of it', async () => {
    const application = await createApplication();
    const second = await createKey(application.id);
    const clients = [application.key, second.key].map((key) => api().withKey(key));
    for (const client of clients) expect(await status(client)).toBe(200);
    expect((await api().request('DELETE', `/applications/${application.id}`)).status).toBe(204);
    for (const client of clients) expect(await status(client)).toBe(401);
    expect((await api().request('GET', `/applications/${application.id}/keys`)).status).toBe(404);
  });

  it('keeps a key created with expires_at until then, answers it with its expiry, and refuses one already past (400)', async () => {
    const application = await createApplication();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const expiring = await createKey(application.id, { expires_at: expiresAt });
    expect(expiring.expires_at).toBe(expiresAt);
    expect(await status(api().withKey(expiring.key))).toBe(200);
    const past = await api().request<{ errors: Record<string, string[]> }>(
      'POST',
      `/applications/${application.id}/keys`,
      { body: { expires_at: new Date(Date.now() - 1000).toISOString() } },
    );
    expect(past.status).toBe(400);
    expect(Object.keys(past.body.errors)).toEqual(['body.expires_at']);
  });

  it('GET /applications/key answers any key its own application, a public key’s too', async () => {
    const publicApplication = await api().request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'Card form', type: 'public', permissions: ['token:create'] },
    });
    const own = await api()
      .withKey(publicApplication.body.key)
      .request<{ id: string; type: string; permissions: string[] }>('GET', '/applications/key');
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({
      id: publicApplication.body.id,
      type: 'public',
      permissions: ['token:create'],
    });
    expect(own.body).not.toHaveProperty('key');
    expect((await env.stack.client.request('GET', '/applications/key')).status).toBe(401);
  });

  it('GET /permissions lists each permission with its description and the types that may hold it, filtered by application_type', async () => {
    type Described = { type: string; description: string; application_types: string[] };
    const all = await api().request<Described[]>('GET', '/permissions');
    expect(all.status).toBe(200);
    expect(all.body.find((entry) => entry.type === 'token:create')).toMatchObject({
      application_types: ['private', 'public', 'management'],
      description: expect.any(String),
    });
    expect(all.body.find((entry) => entry.type === 'application:update')?.application_types).toEqual([
      'private',
      'management',
    ]);
    const forPublic = await api().request<Described[]>('GET', '/permissions', {
      query: { application_type: 'public' },
    });
    expect(forPublic.body.map((entry) => entry.type)).toEqual(['token:create', 'token-intent:create']);
    // The rule it is read from is the one a create holds a public application to.
    const refused = await api().request('POST', '/applications', {
      body: { name: 'x', type: 'public', permissions: ['token:read'] },
    });
    expect(refused.status).toBe(400);
  });
});

describe('application keys past their expires_at', () => {
  const clock = new TestClock();
  let stack: TestStack;
  let tenant: TestTenant;
  beforeAll(async () => {
    stack = await startStack({ LOG_LEVEL: 'warn' }, { clock });
    tenant = await stack.createTenant();
  });
  afterAll(async () => stack?.stop());

  it('is a 401 from expires_at on, though the key was used (and cached) just before; its other keys go on', async () => {
    const application = await tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'Short-lived', type: 'private', permissions: ['token:create'] },
    });
    const expiresAt = new Date(clock.now().getTime() + 60_000).toISOString();
    const expiring = await tenant.client.request<{ key: string; expires_at: string }>(
      'POST',
      `/applications/${application.body.id}/keys`,
      { body: { expires_at: expiresAt } },
    );
    expect(expiring.status, JSON.stringify(expiring.body)).toBe(201);
    const client = tenant.client.withKey(expiring.body.key);
    expect(await status(client)).toBe(200);
    clock.advance(59_000);
    expect(await status(client)).toBe(200);
    clock.advance(1_000);
    const refused = await client.request('GET', '/applications/key');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(await status(tenant.client.withKey(application.body.key))).toBe(200);
    // Listed until it is deleted, with the expiry that ended it.
    const listed = await tenant.client.request<Key[]>('GET', `/applications/${application.body.id}/keys`);
    expect(listed.body.map((key) => key.expires_at)).toEqual([undefined, expiresAt]);
  });
});
