import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

describe('applications', () => {
  const env = useStack();

  it('creates an application whose key is shown once and stored only as its SHA-256', async () => {
    const created = await env.tenant.client.request<Record<string, unknown> & { id: string; key: string }>(
      'POST',
      '/applications',
      {
        body: { name: 'Checkout', type: 'private', permissions: ['token:create', 'token:read'] },
      },
    );
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^tv_prv_[A-Za-z0-9_-]{43}$/);
    expect(created.body).toMatchObject({
      name: 'Checkout',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [],
      tenant_id: env.tenant.tenantId,
      created_by: env.tenant.applicationId,
    });

    const read = await env.tenant.client.request<Record<string, unknown>>(
      'GET',
      `/applications/${created.body.id}`,
    );
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('key');
    const { key, ...withoutKey } = created.body;
    expect(read.body).toEqual(withoutKey);

    const digest = createHash('sha256').update(key).digest('hex');
    const pool = env.stack.service.runtime.ownerPool;
    const everywhere = await pool.query<{ hits: number }>(
      `SELECT (SELECT count(*) FROM es_events WHERE data::text LIKE '%' || $1 || '%')
            + (SELECT count(*) FROM api_keys WHERE key_hash LIKE '%' || $1 || '%') AS hits`,
      [key.slice(7)],
    );
    expect(everywhere.rows[0]?.hits).toBe(0);
    const stored = await pool.query('SELECT 1 FROM api_keys WHERE key_hash = $1', [digest]);
    expect(stored.rowCount).toBe(1);

    const itsClient = env.tenant.client.withKey(key);
    expect((await itsClient.request('POST', '/tokens', { body: { data: 1 } })).status).toBe(201);
    expect((await itsClient.request('GET', '/applications')).status).toBe(403);
  });

  it('updates name and grants, and the new grants apply at once', async () => {
    const created = await env.tenant.client.applications.create({
      name: 'Before',
      type: 'private',
      permissions: ['token:read'],
    });
    const client = env.tenant.client.withKey(created.key);
    expect((await client.request('POST', '/tokens', { body: { data: 1 } })).status).toBe(403);
    const updated = await env.tenant.client.request<Record<string, unknown>>(
      'PUT',
      `/applications/${created.id}`,
      {
        body: { name: 'After', permissions: ['token:create'] },
      },
    );
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'After',
      permissions: ['token:create'],
      modified_by: env.tenant.applicationId,
    });
    expect(updated.body.modified_at).toEqual(expect.any(String));
    expect((await client.request('POST', '/tokens', { body: { data: 1 } })).status).toBe(201);
  });

  it('a deleted application’s key stops working at once', async () => {
    const created = await env.tenant.client.applications.create({
      name: 'Short-lived',
      type: 'private',
      permissions: ['token:create'],
    });
    const client = env.tenant.client.withKey(created.key);
    expect((await client.request('POST', '/tokens', { body: { data: 1 } })).status).toBe(201);
    expect((await env.tenant.client.request('DELETE', `/applications/${created.id}`)).status).toBe(204);
    expect((await client.request('POST', '/tokens', { body: { data: 1 } })).status).toBe(401);
    expect((await env.tenant.client.request('GET', `/applications/${created.id}`)).status).toBe(404);
    expect((await env.tenant.client.request('DELETE', `/applications/${created.id}`)).status).toBe(404);
    expect(
      (await env.tenant.client.request('PUT', `/applications/${created.id}`, { body: { name: 'x' } })).status,
    ).toBe(404);
  });

  it('lists applications in pages, in creation order', async () => {
    const fresh = await env.stack.createTenant();
    for (let index = 0; index < 4; index++) {
      await fresh.client.applications.create({
        name: `app ${index}`,
        type: 'public',
        permissions: ['token:create'],
      });
    }
    const first = await fresh.client.applications.list({ page: 1, size: 3 });
    const second = await fresh.client.applications.list({ page: 2, size: 3 });
    expect(first.pagination).toEqual({ total_items: 5, page_number: 1, page_size: 3, total_pages: 2 });
    expect(first.data.map((app) => app.name)).toEqual(['Management (bootstrap)', 'app 0', 'app 1']);
    expect(second.data.map((app) => app.name)).toEqual(['app 2', 'app 3']);
    expect((await fresh.client.applications.list({ page: 3, size: 3 })).data).toEqual([]);
  });

  it('keeps public keys to token:create, and names the offending field', async () => {
    const refused = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'POST',
      '/applications',
      {
        body: { name: 'Browser', type: 'public', permissions: ['token:create', 'token:read'] },
      },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toHaveProperty(['body.permissions.1']);
    const unknownPermission = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'POST',
      '/applications',
      {
        body: {
          name: 'x',
          type: 'private',
          permissions: ['token:fly'],
          rules: [{ container: 'pci', permissions: ['token:read'] }],
        },
      },
    );
    expect(unknownPermission.status).toBe(400);
    expect(Object.keys(unknownPermission.body.errors).sort()).toEqual([
      'body.permissions.0',
      'body.rules.0.container',
    ]);
  });
});
