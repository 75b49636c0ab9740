import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LocalKeyring, Vault, TenantKeysUnavailableError, TokenKeyDestroyedError } from '@tokenvault/vault';
import { createPool } from '@tokenvault/platform';
import { eventually } from '@tokenvault/platform/testing';
import { useStack } from './support/stack.ts';

interface Tenant {
  id: string;
  owner_id: string;
  name: string;
  settings: { deduplicate_tokens: string };
  modified_by?: string;
  modified_at?: string;
}

describe('the tenant', () => {
  const env = useStack({}, { tenantName: 'Original' });

  it('is the env.tenant of the key, and can be renamed and reconfigured', async () => {
    const read = await env.tenant.client.request<Tenant>('GET', '/tenants/self');
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: env.tenant.tenantId,
      owner_id: env.tenant.ownerUserId,
      name: 'Original',
      settings: { deduplicate_tokens: 'false' },
      created_by: env.tenant.ownerUserId,
    });
    const updated = await env.tenant.client.request<Tenant>('PUT', '/tenants/self', {
      body: { name: 'Renamed', settings: { deduplicate_tokens: 'true' } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'Renamed',
      settings: { deduplicate_tokens: 'true' },
      modified_by: env.tenant.applicationId,
    });
    expect(Date.parse(updated.body.modified_at!)).toBeGreaterThan(Date.now() - 60_000);
    expect((await env.tenant.client.request<Tenant>('GET', '/tenants/self')).body).toEqual(updated.body);
    // Settings left out keep their value.
    const renamedOnly = await env.tenant.client.request<Tenant>('PUT', '/tenants/self', {
      body: { name: 'Again' },
    });
    expect(renamedOnly.body.settings).toEqual({ deduplicate_tokens: 'true' });
  });

  it('50 identical concurrent updates all succeed: a concurrent writer alone is never a 409', async () => {
    const fresh = await env.stack.createTenant('Busy');
    const body = { name: 'Busy, renamed', settings: { deduplicate_tokens: 'true' } };
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => fresh.client.request<Tenant>('PUT', '/tenants/self', { body })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 50 }, () => 200));
    expect(answers.every((answer) => answer.body.name === 'Busy, renamed')).toBe(true);
  });

  it('deduplicates tokens once the env.tenant setting is "true"', async () => {
    await env.tenant.client.request('PUT', '/tenants/self', {
      body: { name: 'Dedup', settings: { deduplicate_tokens: 'true' } },
    });
    const data = { email: `${randomBytes(4).toString('hex')}@example.com` };
    const first = await env.tenant.client.request<{ id: string }>('POST', '/tokens', { body: { data } });
    const second = await env.tenant.client.request<{ id: string }>('POST', '/tokens', { body: { data } });
    expect([first.status, second.status]).toEqual([201, 200]);
    expect(second.body.id).toBe(first.body.id);
    const optedOut = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data, deduplicate_token: false },
    });
    expect(optedOut.status).toBe(201);
    await env.tenant.client.request('PUT', '/tenants/self', {
      body: { name: 'Dedup', settings: { deduplicate_tokens: 'false' } },
    });
    expect((await env.tenant.client.request('POST', '/tokens', { body: { data } })).status).toBe(201);
  });

  it('refuses bad names and settings, naming the field', async () => {
    for (const [body, field] of [
      [{ name: '' }, 'body.name'],
      [{ name: '   ' }, 'body.name'],
      [{ name: 'x'.repeat(201) }, 'body.name'],
      [{}, 'body.name'],
      [{ name: 'ok', settings: { deduplicate_tokens: true } }, 'body.settings.deduplicate_tokens'],
      [{ name: 'ok', settings: { deduplicate_tokens: 'yes' } }, 'body.settings.deduplicate_tokens'],
      [{ name: 'ok', settings: { colour: 'red' } }, 'body.settings.colour'],
    ] as const) {
      const response = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
        'PUT',
        '/tenants/self',
        { body },
      );
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(response.body.errors)).toEqual([field]);
    }
    expect(
      (await env.tenant.client.request('PUT', '/tenants/self', { body: { name: 'x'.repeat(200) } })).status,
    ).toBe(200);
  });

  it('on delete: every key gets 401 at once, read models go, and its token data cannot be decrypted', async () => {
    const doomed = await env.stack.createTenant('Doomed');
    const other = await doomed.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    const otherClient = doomed.client.withKey(other.key);
    const token = await doomed.client.tokens.create({
      data: { secret: 'shredded' },
      metadata: { customer: 'c-1' },
    });
    expect((await otherClient.request('GET', `/tokens/${token.id}`)).status).toBe(200);
    const survivor = await env.stack.createTenant('Survivor');
    const survivorToken = await survivor.client.tokens.create({ data: 'still here' });

    expect((await doomed.client.request('DELETE', '/tenants/self')).status).toBe(204);
    expect((await doomed.client.request('GET', '/tenants/self')).status).toBe(401);
    expect((await otherClient.request('GET', `/tokens/${token.id}`)).status).toBe(401);

    const pool = env.stack.service.runtime.ownerPool;
    const rowsOf = async (table: string, column: string) =>
      (await pool.query(`SELECT 1 FROM ${table} WHERE ${column} = $1`, [doomed.tenantId])).rowCount;
    for (const [table, column] of [
      ['tenants', 'id'],
      ['applications', 'tenant_id'],
      ['api_keys', 'tenant_id'],
      ['tenant_members', 'tenant_id'],
      ['tokens', 'tenant_id'],
      ['token_metadata', 'tenant_id'],
      ['tenant_keys', 'tenant_id'],
    ] as const) {
      expect(await rowsOf(table, column), table).toBe(0);
    }
    // The usage counters and the audit log trail the writes (the projector's, in either mode).
    await eventually(async () => {
      for (const table of [
        'token_type_usage',
        'token_daily_creations',
        'token_monthly_usage',
        'token_monthly_activity',
      ]) {
        expect(await rowsOf(table, 'tenant_id'), table).toBe(0);
      }
      const audit = await pool.query<{ message: string }>(
        'SELECT message FROM audit_logs WHERE tenant_id = $1',
        [doomed.tenantId],
      );
      expect(audit.rows).toEqual([{ message: 'Tenant deleted' }]);
    });

    // The events are immutable and still hold the sealed data; without the data key it stays sealed.
    const events = await pool.query<{ data: { token_id: string; data_ciphertext: string } }>(
      `SELECT data FROM es_events WHERE event_type = 'TokenCreated' AND metadata->>'tenant_id' = $1`,
      [doomed.tenantId],
    );
    expect(events.rows).toHaveLength(1);
    const freshVaultPool = createPool({ connectionString: env.stack.database.url, max: 1 });
    try {
      const freshVault = new Vault(
        freshVaultPool,
        new LocalKeyring([['default', env.stack.config.MASTER_KEY]]),
      );
      const [event] = events.rows;
      // The token's own key went with the tenant's keys: either is gone, so the data is.
      const destroyed = (error: unknown) =>
        error instanceof TenantKeysUnavailableError || error instanceof TokenKeyDestroyedError;
      await expect(
        freshVault.decrypt(doomed.tenantId, event!.data.token_id, event!.data.data_ciphertext),
      ).rejects.toSatisfy(destroyed);
      await expect(
        env.stack.service.runtime.vault.decrypt(doomed.tenantId, token.id, event!.data.data_ciphertext),
      ).rejects.toSatisfy(destroyed);
      const keys = await pool.query('SELECT 1 FROM token_keys WHERE tenant_id = $1', [doomed.tenantId]);
      expect(keys.rowCount).toBe(0);
    } finally {
      await freshVaultPool.end();
    }
    expect(await survivor.client.tokens.get(survivorToken.id)).toMatchObject({ data: 'still here' });
  });

  it('another env.tenant’s key always acts on its own tenant', async () => {
    const other = await env.stack.createTenant('Other');
    expect((await other.client.request<Tenant>('GET', '/tenants/self')).body.id).toBe(other.tenantId);
  });
});
