import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTenant } from '@tokenvault/platform';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';

describe('tenant isolation', () => {
  let stack: TestStack;
  let alice: TestTenant;
  let bob: TestTenant;

  beforeAll(async () => {
    stack = await startStack();
    alice = await stack.createTenant('Alice Inc');
    bob = await stack.createTenant('Bob Ltd');
  });
  afterAll(async () => stack?.stop());

  it('another tenant’s token is a 404 on every token route, exactly like a token that never existed', async () => {
    const token = await alice.client.tokens.create({ id: 'shared-name', data: 'alice only' });
    for (const id of [token.id, 'never-existed']) {
      const read = await bob.client.request<{ title: string; detail: string }>('GET', `/tokens/${id}`);
      const removed = await bob.client.request<{ title: string; detail: string }>('DELETE', `/tokens/${id}`);
      expect([read.status, removed.status]).toEqual([404, 404]);
      expect(read.body.detail).toBe('No token with this id.');
      expect(removed.body.detail).toBe('No token with this id.');
    }
    // The same caller-chosen id is free in another tenant: a 409 would reveal that it is taken.
    expect(
      (await bob.client.request('POST', '/tokens', { body: { id: 'shared-name', data: 'bob' } })).status,
    ).toBe(201);
    expect(await alice.client.tokens.get('shared-name')).toMatchObject({ data: 'alice only' });
    expect(await bob.client.tokens.get('shared-name')).toMatchObject({ data: 'bob' });
  });

  it('another tenant’s application is a 404 on every application route and never listed', async () => {
    const application = await alice.client.applications.create({
      name: 'alice app',
      type: 'private',
      permissions: ['token:read'],
    });
    expect((await bob.client.request('GET', `/applications/${application.id}`)).status).toBe(404);
    expect(
      (await bob.client.request('PUT', `/applications/${application.id}`, { body: { name: 'stolen' } }))
        .status,
    ).toBe(404);
    expect((await bob.client.request('DELETE', `/applications/${application.id}`)).status).toBe(404);
    const bobs = await bob.client.applications.list({ size: 100 });
    expect(bobs.data.map((app) => app.tenant_id)).toEqual(bobs.data.map(() => bob.tenantId));
    expect(await alice.client.applications.get(application.id)).toMatchObject({ name: 'alice app' });
  });

  it('a key acts only on its own tenant, whatever ids it names', async () => {
    const token = await bob.client.tokens.create({ data: 'bob secret' });
    const aliceKeyOnly = await alice.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    expect((await alice.client.withKey(aliceKeyOnly.key).request('GET', `/tokens/${token.id}`)).status).toBe(
      404,
    );
  });

  it('row-level security is a second wall: the app role sees no other tenant’s rows even without a WHERE', async () => {
    await alice.client.tokens.create({ data: 'a' });
    await bob.client.tokens.create({ data: 'b' });
    const pool = stack.service.runtime.appPool;
    const seen = await withTenant(pool, alice.tenantId, async (client) => {
      const tokens = await client.query<{ tenant_id: string }>('SELECT DISTINCT tenant_id FROM tokens');
      const applications = await client.query<{ tenant_id: string }>(
        'SELECT DISTINCT tenant_id FROM applications',
      );
      const tenants = await client.query<{ id: string }>('SELECT id FROM tenants');
      const tokenKeys = await client.query<{ tenant_id: string }>(
        'SELECT DISTINCT tenant_id FROM token_keys',
      );
      expect(tokenKeys.rows).toHaveLength(1);
      return [
        ...tokens.rows.map((row) => row.tenant_id),
        ...tokenKeys.rows.map((row) => row.tenant_id),
        ...applications.rows.map((row) => row.tenant_id),
        ...tenants.rows.map((row) => row.id),
      ];
    });
    expect(new Set(seen)).toEqual(new Set([alice.tenantId]));
    // A connection of the app role that was never set to a tenant sees nothing at all.
    const fresh = new pg.Client({
      connectionString: stack.database.url,
      options: `-c role=${stack.config.DATABASE_APP_ROLE}`,
    });
    await fresh.connect();
    try {
      expect((await fresh.query('SELECT count(*)::int AS count FROM tokens')).rows[0]).toEqual({ count: 0 });
      expect((await fresh.query('SELECT count(*)::int AS count FROM applications')).rows[0]).toEqual({
        count: 0,
      });
      expect((await fresh.query('SELECT count(*)::int AS count FROM token_keys')).rows[0]).toEqual({
        count: 0,
      });
      await expect(fresh.query('SELECT * FROM api_keys')).rejects.toThrow(/permission denied/);
      await expect(fresh.query('SELECT * FROM tenant_keys')).rejects.toThrow(/permission denied/);
    } finally {
      await fresh.end();
    }
  });
});
