import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPool,
  createRedis,
  Problem,
  type GuardedCall,
  type HandlerResult,
  type Pool,
  type SensitiveData,
} from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { derivedKey, destroyTenantKeysWithin, LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { Idempotency } from './idempotency.ts';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const masterKey = randomBytes(32).toString('base64');
let database: TestDatabase;
let pool: Pool;
let vault: Vault;

beforeAll(async () => {
  database = await createTestDatabase(vaultMigrations);
  pool = createPool({ connectionString: database.url, max: 2 });
  vault = new Vault(pool, new LocalKeyring([['default', masterKey]]));
});
afterAll(async () => {
  await redis.quit();
  await pool?.end();
  await database?.drop();
});

const prefix = `idempotency-spec-${randomUUID()}`;
const guard = () => new Idempotency(redis, vault, { prefix, masterKey, ttlSeconds: 60, lockTtlMs: 5_000 });

/** A keyed POST of a tenant of its own, to a route that returns what it declares. */
async function callOf(returnsSensitive: SensitiveData[]): Promise<GuardedCall> {
  const tenantId = randomUUID();
  await vault.createTenantKeys(tenantId);
  const body = { args: { n: 1 } };
  return {
    route: {
      method: 'post',
      path: '/reactors/:id/react',
      returnsSensitive,
    } satisfies Partial<GuardedCall['route']>,
    req: { method: 'POST', originalUrl: '/reactors/r/react', body, requestId: 'req-1' },
    principal: { tenantId, actorId: randomUUID() },
  } as unknown as GuardedCall;
}

/** The records under the spec's prefix: `d|<fingerprint>|<sealed>` each, with its Redis key. */
async function records(): Promise<{ redisKey: string; recordId: string; value: string }[]> {
  const keys = await redis.keys(`${prefix}:idempotency:*`);
  return Promise.all(
    keys.map(async (redisKey) => ({
      redisKey,
      recordId: redisKey.split(':').at(-1)!,
      value: (await redis.get(redisKey))!,
    })),
  );
}

async function clear(): Promise<void> {
  const keys = await redis.keys(`${prefix}:idempotency:*`);
  if (keys.length > 0) await redis.del(keys);
}

describe('Idempotency records', () => {
  it('keep a response sealed under the tenant’s key: replayed while it lives, opened by nothing once it is destroyed', async () => {
    const call = await callOf([]);
    const secret = `confidential-${randomUUID()}`;
    const runs: HandlerResult[] = [];
    const run = async () => {
      const result = { status: 201, body: { name: secret } };
      runs.push(result);
      return result;
    };
    const key = randomUUID();
    expect(await guard().run(call, key, run)).toEqual({ status: 201, body: { name: secret } });
    const replayed = await guard().run(call, key, run);
    expect(replayed).toMatchObject({
      status: 201,
      body: { name: secret },
      headers: { 'idempotency-replayed': 'true' },
    });
    expect(runs).toHaveLength(1);

    const [record] = await records();
    expect(record!.value).not.toContain(secret);
    const sealed = record!.value.split('|')[2]!;
    const subject = `idempotency/${record!.recordId}`;
    expect(await vault.decrypt(call.principal.tenantId, subject, sealed)).toMatchObject({ status: 201 });
    await destroyTenantKeysWithin(pool, call.principal.tenantId);
    vault.forget(call.principal.tenantId);
    await expect(vault.decrypt(call.principal.tenantId, subject, sealed)).rejects.toThrow();
    await clear();
  });

  it('keep only the status of a route that returns token data: a replay is a 409 naming it, not a second run', async () => {
    const call = await callOf(['token-data']);
    const number = '4242424242424242';
    let runs = 0;
    const run = async () => {
      runs++;
      return { status: 200, body: { raw: { number } } };
    };
    const key = randomUUID();
    expect((await guard().run(call, key, run)).body).toEqual({ raw: { number } });
    const [record] = await records();
    const kept = await vault.decrypt(
      call.principal.tenantId,
      `idempotency/${record!.recordId}`,
      record!.value.split('|')[2]!,
    );
    expect(kept).toEqual({ status: 200, withheld: true, returns: ['token-data'] });
    const replay = await guard()
      .run(call, key, run)
      .catch((error: unknown) => error);
    expect(replay).toBeInstanceOf(Problem);
    expect(replay).toMatchObject({ status: 409, slug: 'idempotency-response-not-kept' });
    expect((replay as Problem).detail).toContain('status 200');
    expect((replay as Problem).detail).toContain('can hold token data');
    expect(runs).toBe(1);
    // A problem of such a route (a reactor's error can quote its input) is withheld too.
    const failing = async (): Promise<HandlerResult> => {
      throw new Problem(400, 'reactor/BadRequestError', 'Bad Request', `not accepted: ${number}`);
    };
    const otherKey = randomUUID();
    await expect(guard().run(call, otherKey, failing)).rejects.toThrow(Problem);
    for (const { value } of await records()) expect(value).not.toContain(number);
    await expect(guard().run(call, otherKey, failing)).rejects.toMatchObject({
      status: 409,
      slug: 'idempotency-response-not-kept',
    });
    await clear();
  });

  it('keep a token write’s answer without its tokens’ summaries and fingerprints, replayed with its id and status', async () => {
    const call = await callOf(['token-summary']);
    const token = (id: string) => ({
      id,
      tenant_id: call.principal.tenantId,
      type: 'card',
      created_at: '2026-12-08T00:00:00.000Z',
      metadata: { n: '1' },
      fingerprint: 'fp-of-the-data',
      card: { bin: '55555555', last4: '4444' },
      bank: { routing_number: '110000000', last4: '6789' },
    });
    let runs = 0;
    // A tokenize answer: the caller's JSON, tokens anywhere in it (its own `card` stays).
    const answer = { order: { card: 'the caller’s own' }, payment: token('t-1'), more: [token('t-2')] };
    const run = async () => {
      runs++;
      return { status: 201, headers: { location: '/tokens/t-1' }, body: answer };
    };
    const key = randomUUID();
    expect((await guard().run(call, key, run)).body).toEqual(answer);
    const [record] = await records();
    const kept = JSON.stringify(
      await vault.decrypt(
        call.principal.tenantId,
        `idempotency/${record!.recordId}`,
        record!.value.split('|')[2]!,
      ),
    );
    for (const field of ['fingerprint', 'fp-of-the-data', '55555555', '110000000', 'last4']) {
      expect(kept).not.toContain(field);
    }
    const stripped = ({ fingerprint: _f, card: _c, bank: _b, ...rest }: ReturnType<typeof token>) => rest;
    expect(await guard().run(call, key, run)).toEqual({
      status: 201,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        location: '/tokens/t-1',
        'idempotency-replayed': 'true',
        'idempotency-withheld-fields': 'card, bank, fingerprint',
      },
      body: {
        order: { card: 'the caller’s own' },
        payment: stripped(token('t-1')),
        more: [stripped(token('t-2'))],
      },
    });
    expect(runs).toBe(1);
    await clear();
  });

  it('keep only the status of a route that returns a secret: its replay, by any key of the application, says why', async () => {
    const call = await callOf(['api-key']);
    const secret = `tv_mgt_${randomUUID()}`;
    let runs = 0;
    const run = async () => {
      runs++;
      return { status: 201, body: { id: 'app-1', key: secret } };
    };
    const key = randomUUID();
    expect((await guard().run(call, key, run)).body).toEqual({ id: 'app-1', key: secret });
    const [record] = await records();
    const kept = await vault.decrypt(
      call.principal.tenantId,
      `idempotency/${record!.recordId}`,
      record!.value.split('|')[2]!,
    );
    expect(kept).toEqual({ status: 201, withheld: true, returns: ['api-key'] });
    const replay = await guard()
      .run(call, key, run)
      .catch((error: unknown) => error);
    expect(replay).toMatchObject({ status: 409, slug: 'idempotency-response-not-kept' });
    expect((replay as Problem).detail).toContain('status 201');
    expect((replay as Problem).detail).toContain('a new API key, of which only the SHA-256 is kept');
    expect(JSON.stringify(replay)).not.toContain(secret);
    expect(runs).toBe(1);
    await clear();
  });

  it('answer a record sealed the old way (under a key derived from MASTER_KEY) as not kept', async () => {
    const call = await callOf([]);
    const key = randomUUID();
    let runs = 0;
    const run = async () => {
      runs++;
      return { status: 201, body: { id: 'x' } };
    };
    await guard().run(call, key, run);
    const [{ redisKey, value }] = (await records()) as [{ redisKey: string; value: string }, ...unknown[]];
    const [, fingerprint] = value.split('|');
    const sealKey = derivedKey(masterKey, 'response seal v1', 'tokenvault/idempotency');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', sealKey, iv);
    const text = Buffer.concat([cipher.update('{"status":201,"headers":{}}'), cipher.final()]);
    const legacy = Buffer.concat([iv, cipher.getAuthTag(), text]).toString('base64');
    await redis.set(redisKey, `d|${fingerprint}|${legacy}`, 'EX', 60);
    await expect(guard().run(call, key, run)).rejects.toMatchObject({
      status: 409,
      slug: 'idempotency-response-not-kept',
    });
    expect(runs).toBe(1);
    await clear();
  });
});
