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

  describe('no key grants what it does not hold', () => {
    type ProblemBody = { type: string; status: number; errors: Record<string, string[]> };

    it('a key holding only application:create cannot create a management application, nor grant token:read', async () => {
      const creator = await env.tenant.client.applications.create({
        name: 'Creator',
        type: 'private',
        permissions: ['application:create'],
      });
      const client = env.tenant.client.withKey(creator.key);
      const management = await client.request<ProblemBody>('POST', '/applications', {
        body: { name: 'Escalated', type: 'management', permissions: ['application:create', 'token:read'] },
      });
      expect(management.status).toBe(403);
      expect(management.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(management.body.errors).toEqual({
        'body.type': ['management is not held by this key (it is private)'],
        'body.permissions': ['token:read is not held by this key'],
      });
      const reader = await client.request<ProblemBody>('POST', '/applications', {
        body: {
          name: 'Reader',
          type: 'private',
          rules: [{ container: '/pci/', permissions: ['token:read'] }],
        },
      });
      expect(reader.status).toBe(403);
      expect(reader.body.errors).toEqual({
        'body.rules.0.permissions': ['token:read on /pci/ is not held by this key'],
      });
      // What it holds it may pass on.
      const peer = await client.request('POST', '/applications', {
        body: { name: 'Peer', type: 'public', permissions: [] },
      });
      expect(peer.status).toBe(201);
    });

    it('a key holding only application:update cannot widen its own application', async () => {
      const updater = await env.tenant.client.applications.create({
        name: 'Updater',
        type: 'private',
        permissions: ['application:update'],
      });
      const client = env.tenant.client.withKey(updater.key);
      const widened = await client.request<ProblemBody>('PUT', `/applications/${updater.id}`, {
        body: { name: 'Updater', permissions: ['application:update', 'token:read', 'application:read'] },
      });
      expect(widened.status).toBe(403);
      expect(widened.body.errors).toEqual({
        'body.permissions': [
          'token:read is not held by this key',
          'application:read is not held by this key',
        ],
      });
      expect((await client.request('GET', `/applications/${updater.id}`)).status).toBe(403);
      // Nor may it change the tenant's management key.
      const management = await client.request<ProblemBody>(
        'PUT',
        `/applications/${env.tenant.applicationId}`,
        { body: { name: 'Hijacked', permissions: [] } },
      );
      expect(management.status).toBe(403);
      expect(management.body.errors).toHaveProperty(['path.id']);
      // Narrowing itself, or renaming, is fine.
      const renamed = await client.request('PUT', `/applications/${updater.id}`, {
        body: { name: 'Renamed', permissions: ['application:update'] },
      });
      expect(renamed.status).toBe(200);
    });

    it('a request quota is held like a permission: no raising its own, no stripping one with more', async () => {
      const updater = await env.tenant.client.applications.create({
        name: 'Quota updater',
        type: 'private',
        permissions: ['application:update', 'application:create'],
        rate_limit: { requests_per_minute: 1_000 },
      });
      const client = env.tenant.client.withKey(updater.key);
      const raised = await client.request<ProblemBody>('PUT', `/applications/${updater.id}`, {
        body: {
          name: 'Quota updater',
          permissions: ['application:update', 'application:create'],
          rate_limit: { requests_per_minute: 10_000_000 },
        },
      });
      expect(raised.status).toBe(403);
      expect(Object.keys(raised.body.errors)).toEqual(['body.rate_limit.requests_per_minute']);
      // Nor can the tenant's management key, on the service default, hand out more than that default.
      const overDefault = await env.tenant.client.request<ProblemBody>('POST', '/applications', {
        body: { name: 'Over', type: 'private', rate_limit: { requests_per_minute: 10_000_000 } },
      });
      expect(overDefault.status).toBe(403);
      // A peer application with a smaller quota it may create; one above its own it may not.
      const above = await client.request<ProblemBody>('POST', '/applications', {
        body: { name: 'Above', type: 'private', rate_limit: { requests_per_minute: 1_001 } },
      });
      expect(above.status).toBe(403);
      const below = await client.request<{ id: string }>('POST', '/applications', {
        body: { name: 'Below', type: 'private', rate_limit: { requests_per_minute: 10 } },
      });
      expect(below.status).toBe(201);
      // An application holding a permission the key lacks is not the key's to strip.
      const richer = await env.tenant.client.applications.create({
        name: 'Richer',
        type: 'private',
        permissions: ['application:update', 'token:read'],
      });
      const stripped = await client.request<ProblemBody>('PUT', `/applications/${richer.id}`, {
        body: { name: 'Stripped', permissions: [] },
      });
      expect(stripped.status).toBe(403);
      expect(Object.keys(stripped.body.errors)).toEqual(['path.id']);
      expect((await env.tenant.client.applications.get(richer.id)).permissions).toEqual([
        'application:update',
        'token:read',
      ]);
    });

    it('a key holding only application:delete cannot delete a greater key', async () => {
      const deleter = await env.tenant.client.applications.create({
        name: 'Deleter',
        type: 'private',
        permissions: ['application:delete'],
      });
      const client = env.tenant.client.withKey(deleter.key);
      const management = await client.request<ProblemBody>(
        'DELETE',
        `/applications/${env.tenant.applicationId}`,
      );
      expect(management.status).toBe(403);
      expect(Object.keys(management.body.errors)).toEqual(['path.id']);
      expect((await env.tenant.client.applications.get(env.tenant.applicationId)).id).toBe(
        env.tenant.applicationId,
      );
      const lesser = await env.tenant.client.applications.create({
        name: 'Lesser',
        type: 'public',
        permissions: [],
      });
      expect((await client.request('DELETE', `/applications/${lesser.id}`)).status).toBe(204);
    });

    it('an update keeps a public application to token:create', async () => {
      const browser = await env.tenant.client.applications.create({
        name: 'Browser',
        type: 'public',
        permissions: ['token:create'],
      });
      const widened = await env.tenant.client.request<ProblemBody>('PUT', `/applications/${browser.id}`, {
        body: { name: 'Browser', permissions: ['token:create', 'token:read'] },
      });
      expect(widened.status).toBe(400);
      expect(widened.body.errors).toHaveProperty(['body.permissions.1']);
    });
  });
});
