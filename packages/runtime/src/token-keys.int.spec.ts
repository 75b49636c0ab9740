import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Writable } from 'node:stream';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { loadConfig } from '@tokenvault/platform';
import { bootstrapTenant } from '@tokenvault/tenancy';
import { sweepExpiredTokenKeys, sweepOrphanTokenKeys, tokenStream } from '@tokenvault/tokens';
import {
  addTenantKeyVersion,
  DecryptionError,
  LocalKeyring,
  TokenKeyDestroyedError,
  open,
  rewrapTokenKeys,
  rewrapTokenKeysBatch,
  storeTokenKey,
} from '@tokenvault/vault';
import { allMigrations, createRuntime, type Runtime } from './runtime.ts';
import { startAllInOne, type RunningService } from './roles/all-in-one.role.ts';

// Per-token keys end to end on the PostgreSQL store: the key commits with the create, goes with
// the delete or the expiry sweep, and what is left in es_events opens with no key there is.
const masterKeys = { a: randomBytes(32).toString('base64'), b: randomBytes(32).toString('base64') };
let now = Date.now();
const clock = { now: () => new Date(now) };
let database: TestDatabase;
let service: RunningService;
let tenantId: string;
let apiKey: string;
const logs: string[] = [];

const call = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers: { 'svc-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
};

const configFor = (url: string) =>
  loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: url,
    PORT: '0',
    HOST: '127.0.0.1',
    MASTER_KEYS: `b:${masterKeys.b},a:${masterKeys.a}`,
    LOG_LEVEL: 'debug',
    QUEUE_PREFIX: `tv-test-keys-${randomUUID().slice(0, 8)}`,
    // In-process: HTTP processes would fork the test runner itself.
    HTTP_PROCESSES: '1',
    ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
  });

beforeAll(async () => {
  database = await createTestDatabase(allMigrations);
  service = await startAllInOne(configFor(database.url), {
    clock,
    logDestination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    }),
  });
  const tenant = await bootstrapTenant(
    service.runtime.store,
    service.runtime.vault,
    { tenantName: 'Keys', ownerEmail: `owner-${randomUUID()}@example.com` },
    clock,
  );
  await service.runtime.consistency.writeReadable(tenant.position, 60_000);
  tenantId = tenant.tenant_id;
  apiKey = tenant.api_key;
});

afterAll(async () => {
  await service?.close();
  await database?.drop();
});

/** Every key the database and the ring could give: master keys, tenant data keys, token keys. */
async function everyKey(): Promise<Buffer[]> {
  const pool = service.runtime.ownerPool;
  const masters = Object.values(masterKeys).map((key) => Buffer.from(key, 'base64'));
  const tenantKeys: Buffer[] = [];
  const rows = await pool.query<{ tenant_id: string; version: number; wrapped_data_key: string }>(
    'SELECT tenant_id, version, wrapped_data_key FROM tenant_keys',
  );
  for (const row of rows.rows) {
    for (const master of masters) {
      for (const ad of [`data-key:${row.tenant_id}`, `data-key:${row.tenant_id}:${row.version}`]) {
        try {
          tenantKeys.push(open(createSecretKey(master), row.wrapped_data_key, ad));
        } catch {
          // not this master key
        }
      }
    }
  }
  const tokenKeys: Buffer[] = [];
  const tokenRows = await pool.query<{ tenant_id: string; token_id: string; wrapped_key: string }>(
    'SELECT tenant_id, token_id, wrapped_key FROM token_keys',
  );
  for (const row of tokenRows.rows) {
    for (const tenantKey of tenantKeys) {
      try {
        tokenKeys.push(
          open(createSecretKey(tenantKey), row.wrapped_key, `token-key:${row.tenant_id}:${row.token_id}`),
        );
      } catch {
        // not this tenant key
      }
    }
  }
  expect(tenantKeys.length).toBeGreaterThan(0);
  expect(tokenKeys.length).toBe(tokenRows.rows.length);
  return [...masters, ...tenantKeys, ...tokenKeys];
}

async function expectUnrecoverable(tokenId: string) {
  const pool = service.runtime.ownerPool;
  const events = await pool.query<{ data: { data_ciphertext: string } }>(
    `SELECT data FROM es_events WHERE stream_id = $1 AND event_type = 'TokenCreated'`,
    [tokenStream(tenantId, tokenId)],
  );
  expect(events.rows).toHaveLength(1);
  const sealed = events.rows[0]!.data.data_ciphertext;
  expect(sealed.startsWith('tk:')).toBe(true);
  const keys = await pool.query('SELECT 1 FROM token_keys WHERE tenant_id = $1 AND token_id = $2', [
    tenantId,
    tokenId,
  ]);
  expect(keys.rowCount).toBe(0);
  const candidates = await everyKey();
  for (const key of candidates) {
    expect(() => open(createSecretKey(key), sealed.slice(3), `${tenantId}:${tokenId}`)).toThrow(
      DecryptionError,
    );
  }
  // A process that never saw the token, with the whole ring: nothing either.
  const fresh = await createRuntime(configFor(database.url));
  try {
    await expect(fresh.vault.decrypt(tenantId, tokenId, sealed)).rejects.toBeInstanceOf(
      TokenKeyDestroyedError,
    );
  } finally {
    await fresh.close();
  }
}

describe('per-token keys', () => {
  it('a token key commits with the create; the token reads', async () => {
    const created = await call('POST', '/tokens', { type: 'token', data: { secret: 'crown jewels' } });
    expect(created.status).toBe(201);
    const rows = await service.runtime.ownerPool.query<{ tenant_key_version: number }>(
      'SELECT tenant_key_version FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
      [tenantId, created.body.id],
    );
    expect(rows.rows).toEqual([{ tenant_key_version: 1 }]);
    expect((await call('GET', `/tokens/${String(created.body.id)}`)).body.data).toEqual({
      secret: 'crown jewels',
    });
  });

  it('a token whose key is not in memory opens with the key its row came with: no query of its own, one page or one token', async () => {
    const ids: string[] = [];
    for (const data of ['first', 'second', 'third']) {
      ids.push(
        String((await call('POST', '/tokens', { type: 'token', data, metadata: { batch: 'cold' } })).body.id),
      );
    }
    for (const id of ids) service.runtime.vault.forgetToken(tenantId, id);
    // Watched, not replaced: every statement still runs on the real pool.
    const spy = vi.spyOn(service.runtime.ownerPool, 'query');
    let statements: string[];
    try {
      expect((await call('GET', `/tokens/${ids[0]}`)).body.data).toBe('first');
      service.runtime.vault.forgetToken(tenantId, ids[0]!);
      const page = await call('GET', '/tokens?metadata.batch=cold');
      // One clock instant: the page orders the three by id.
      expect((page.body.data as { data: unknown }[]).map((token) => token.data).sort()).toEqual([
        'first',
        'second',
        'third',
      ]);
      statements = spy.mock.calls.map(([config]: unknown[]) =>
        typeof config === 'string' ? config : (config as { text: string }).text,
      );
    } finally {
      spy.mockRestore();
    }
    expect(statements.filter((text) => text.includes('token_keys'))).toEqual([]);
    expect(service.runtime.vault.cachedTokenKeys).toBeGreaterThanOrEqual(3);
  });

  it('a deleted token’s ciphertext is still in es_events and opens with no key the service holds', async () => {
    const created = await call('POST', '/tokens', { type: 'token', data: { pan: '4111111111111111' } });
    const id = String(created.body.id);
    expect((await call('GET', `/tokens/${id}`)).status).toBe(200);
    expect((await call('DELETE', `/tokens/${id}`)).status).toBe(204);
    expect((await call('GET', `/tokens/${id}`)).status).toBe(404);
    await expectUnrecoverable(id);
  });

  it('an expired token likewise, once the sweep has run after expires_at', async () => {
    const expiresAt = new Date(now + 30_000).toISOString();
    const created = await call('POST', '/tokens', {
      type: 'token',
      data: { pan: '5500000000000004' },
      expires_at: expiresAt,
    });
    const id = String(created.body.id);
    expect((await call('GET', `/tokens/${id}`)).status).toBe(200);
    // Not yet expired: the sweep keeps it.
    expect(await sweepExpiredTokenKeys(service.runtime.ownerPool, clock)).toBe(0);
    now += 31_000;
    expect(await sweepExpiredTokenKeys(service.runtime.ownerPool, clock)).toBe(1);
    expect((await call('GET', `/tokens/${id}`)).status).toBe(404);
    await expectUnrecoverable(id);
  });

  it('an update of expires_at moves the key’s expiry with it', async () => {
    const created = await call('POST', '/tokens', {
      type: 'token',
      data: 'kept',
      expires_at: new Date(now + 10_000).toISOString(),
    });
    const id = String(created.body.id);
    expect((await call('PATCH', `/tokens/${id}`, { expires_at: null })).status).toBe(200);
    now += 20_000;
    expect(await sweepExpiredTokenKeys(service.runtime.ownerPool, clock)).toBe(0);
    expect((await call('GET', `/tokens/${id}`)).body.data).toBe('kept');
  });

  it('every process forgets a deleted token’s unwrapped key (the invalidation NOTIFY)', async () => {
    const created = await call('POST', '/tokens', { type: 'token', data: 'cached elsewhere' });
    const id = String(created.body.id);
    const other: Runtime = await createRuntime(configFor(database.url));
    try {
      const row = await other.ownerPool.query<{ data_ciphertext: string }>(
        'SELECT data_ciphertext FROM tokens WHERE tenant_id = $1 AND id = $2',
        [tenantId, id],
      );
      expect(await other.vault.decrypt(tenantId, id, row.rows[0]!.data_ciphertext)).toBe('cached elsewhere');
      expect(other.vault.cachedTokenKeys).toBe(1);
      expect((await call('DELETE', `/tokens/${id}`)).status).toBe(204);
      const deadline = Date.now() + 10_000;
      while (other.vault.cachedTokenKeys > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(other.vault.cachedTokenKeys).toBe(0);
      await expect(other.vault.decrypt(tenantId, id, row.rows[0]!.data_ciphertext)).rejects.toBeInstanceOf(
        TokenKeyDestroyedError,
      );
    } finally {
      await other.close();
    }
  });

  it('a token sealed before token keys (under the tenant key, no token key) reads, and gets a key at its next data update', async () => {
    const id = randomUUID();
    const legacy = await service.runtime.vault.encrypt(tenantId, id, { old: true });
    expect(legacy.startsWith('v1.')).toBe(true);
    const position = await service.runtime.store.append(
      tokenStream(tenantId, id),
      [
        {
          type: 'TokenCreated',
          data: {
            token_id: id,
            tenant_id: tenantId,
            type: 'token',
            data_ciphertext: legacy,
            containers: ['/general/'],
            metadata: {},
            fingerprint: await service.runtime.vault.fingerprint(tenantId, 'token', { old: true }),
            created_by: randomUUID(),
            created_at: clock.now().toISOString(),
          },
          metadata: { tenant_id: tenantId, actor_type: 'system' },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    await service.runtime.consistency.writeReadable(position.position, 60_000);
    expect((await call('GET', `/tokens/${id}`)).body.data).toEqual({ old: true });
    expect((await call('PATCH', `/tokens/${id}`, { data: { old: false } })).status).toBe(200);
    const keys = await service.runtime.ownerPool.query(
      'SELECT 1 FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
      [tenantId, id],
    );
    expect(keys.rowCount).toBe(1);
    expect((await call('GET', `/tokens/${id}`)).body.data).toEqual({ old: false });
  });

  it('the orphan sweep removes a key whose token the store never got, and only that', async () => {
    const kept = await call('POST', '/tokens', { type: 'token', data: 'mine' });
    const orphanId = randomUUID();
    await storeTokenKey(service.runtime.ownerPool, {
      tenantId,
      tokenId: orphanId,
      wrappedKey: 'v1.AAAA',
      tenantKeyVersion: 1,
      expiresAt: null,
    });
    await service.runtime.ownerPool.query(
      `UPDATE token_keys SET created_at = now() - interval '1 hour' WHERE tenant_id = $1`,
      [tenantId],
    );
    const removed = await sweepOrphanTokenKeys(service.runtime.ownerPool, service.runtime.store, {
      now: () => new Date(),
    });
    expect(removed).toBe(1);
    const left = await service.runtime.ownerPool.query<{ token_id: string }>(
      'SELECT token_id FROM token_keys WHERE tenant_id = $1 AND token_id = ANY($2)',
      [tenantId, [orphanId, kept.body.id]],
    );
    expect(left.rows.map((row) => row.token_id)).toEqual([kept.body.id]);
  });

  it('rotation re-wraps the tenant’s token keys in batches along the primary key: each once, and they all read after', async () => {
    const ids: string[] = [];
    for (const data of ['r1', 'r2', 'r3', 'r4', 'r5']) {
      ids.push(String((await call('POST', '/tokens', { type: 'token', data })).body.id));
    }
    const pool = service.runtime.ownerPool;
    const versions = async () =>
      (
        await pool.query<{ tenant_key_version: number; count: number }>(
          `SELECT tenant_key_version, count(*)::int AS count FROM token_keys WHERE tenant_id = $1
           GROUP BY tenant_key_version ORDER BY tenant_key_version`,
          [tenantId],
        )
      ).rows;
    const [before] = await versions();
    const rotated = await addTenantKeyVersion(pool, service.runtime.vault.ring, tenantId);
    const batches: number[] = [];
    let next: string | undefined = '';
    while (next !== undefined) {
      const batch = await rewrapTokenKeysBatch(pool, service.runtime.vault.ring, tenantId, 2, next);
      if (batch.rewrapped) batches.push(batch.rewrapped);
      next = batch.next;
    }
    expect(batches.reduce((sum, count) => sum + count, 0)).toBe(before!.count);
    expect(batches.every((count) => count <= 2)).toBe(true);
    expect(await versions()).toEqual([{ tenant_key_version: rotated!.version, count: before!.count }]);
    // A second pass finds none left.
    expect(await rewrapTokenKeys(pool, service.runtime.vault.ring, tenantId, 2)).toBe(0);
    service.runtime.vault.forget(tenantId);
    for (const [index, id] of ids.entries()) {
      expect((await call('GET', `/tokens/${id}`)).body.data).toBe(`r${index + 1}`);
    }
  });

  it('no key material in the logs', async () => {
    const rows = await service.runtime.ownerPool.query<{ wrapped_key: string }>(
      'SELECT wrapped_key FROM token_keys',
    );
    const text = logs.join('');
    expect(text.length).toBeGreaterThan(0);
    for (const key of [...Object.values(masterKeys), ...rows.rows.map((row) => row.wrapped_key)]) {
      expect(text).not.toContain(key);
    }
    expect(new LocalKeyring([['x', masterKeys.a]]).versions).toEqual(['x']);
  });
});
