import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectorMigrations } from '@tokenvault/cqrs';
import { testPrincipal } from '@tokenvault/cqrs/testing';
import { PostgresEventStore, eventStoreMigrations } from '@tokenvault/eventstore';
import { obliterateQueues } from '@tokenvault/jobs';
import { createLogger, createPool, systemClock, type Pool } from '@tokenvault/platform';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { createTokenBody } from '@tokenvault/contracts';
import {
  DecryptionError,
  LocalKeyring,
  TokenKeyDestroyedError,
  Vault,
  vaultMigrations,
} from '@tokenvault/vault';
import { startCardCvcRemoval } from './card-cvc-removal.ts';
import { TokenCommands } from './commands/tokens.commands.ts';
import { tokenStream, type DerivedFromData } from './domain/tokens.events.ts';
import { tokenClaims, tokenHolder } from './domain/tokens.uniqueness.ts';
import { tokensMigrations } from './migrations.ts';
import { tokenKeyStore } from './projections/token-keys.projection.ts';

// The CVC's removal on the real pieces: the PostgreSQL event store with the token keys written in
// its appends, the vault, BullMQ on Redis (delayed jobs), the enqueuer's checkpoint. A TTL of one
// second keeps it short.
const config = {
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  QUEUE_PREFIX: `tv-test-cvc-${randomUUID().slice(0, 8)}`,
  WORKER_CONCURRENCY: 2,
  PROCESSOR_LEASE_MS: 10_000,
};
const tenantId = randomUUID();
const actorId = randomUUID();
const principal = testPrincipal(tenantId, actorId, [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
]);
const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

let database: TestDatabase;
let pool: Pool;
let store: PostgresEventStore;
let vault: Vault;
let commands: TokenCommands;
let removal: { stop(): Promise<void> };

beforeAll(async () => {
  database = await createTestDatabase([
    ...eventStoreMigrations,
    ...projectorMigrations,
    ...vaultMigrations,
    ...tokensMigrations,
  ]);
  pool = createPool({ connectionString: database.url, max: 4 });
  store = new PostgresEventStore(pool, { inlineProjections: [tokenKeyStore], uniqueness: tokenClaims });
  vault = new Vault(pool, new LocalKeyring([['a', randomBytes(32).toString('base64')]]));
  await vault.createTenantKeys(tenantId);
  const queries = { findByFingerprint: async () => undefined, childIds: async () => [] };
  commands = new TokenCommands(store, vault, queries, systemClock, { cardCvcTtlSeconds: 1 });
  removal = await startCardCvcRemoval({
    config,
    store,
    ownerPool: pool,
    deps: { store, vault, clock: systemClock, freshKey: true },
    logger: createLogger('silent'),
  });
});

afterAll(async () => {
  await removal?.stop();
  await obliterateQueues(config).catch(() => undefined);
  await store?.close();
  await pool?.end();
  await database?.drop();
});

const eventsOf = async (id: string) => store.readStream(tokenStream(tenantId, id));
const ciphertexts = async (id: string) =>
  (await eventsOf(id)).flatMap((event) => {
    const sealed = (event.data as { data_ciphertext?: string }).data_ciphertext;
    return sealed ? [{ type: event.type, sealed }] : [];
  });

describe('the CVC’s removal (enqueuer, delayed job, worker)', () => {
  it('removes a card’s CVC after its time, under a new key: no earlier ciphertext opens any more', async () => {
    const id = `card-${randomUUID()}`;
    await commands.create(principal, createTokenBody.parse({ id, type: 'card', data: card }), 'create');
    const keyBefore = await pool.query('SELECT wrapped_key FROM token_keys WHERE token_id = $1', [id]);
    await eventually(async () => {
      expect((await eventsOf(id)).map((event) => event.type)).toEqual(['TokenCreated', 'TokenCvcRemoved']);
    }, 15_000);
    const [created, removed] = await ciphertexts(id);
    const { cvc: _cvc, ...rest } = card;
    expect(await vault.decrypt(tenantId, id, removed!.sealed)).toEqual(rest);
    // Another process's vault (nothing in memory): the ciphertext that held the CVC does not open.
    const fresh = new Vault(pool, vault.ring);
    await expect(fresh.decrypt(tenantId, id, created!.sealed)).rejects.toThrow(DecryptionError);
    const keyAfter = await pool.query('SELECT wrapped_key FROM token_keys WHERE token_id = $1', [id]);
    expect(keyAfter.rows[0]).not.toEqual(keyBefore.rows[0]);
  });

  it('what was derived from the CVC goes in the removal’s append: its blind index, its unique claim, its fingerprint', async () => {
    const id = `card-${randomUUID()}`;
    const byCvc = '{{ data.cvc }}';
    await commands.create(
      principal,
      createTokenBody.parse({
        id,
        type: 'card',
        data: card,
        search_indexes: [{ expression: byCvc, unique: true }, '{{ data.number | last4 }}'],
        fingerprint_expression: byCvc,
      }),
      'create',
    );
    const claimsOf = async () =>
      (
        await pool.query<{ scope: string }>('SELECT scope FROM es_unique_claims WHERE holder = $1', [
          tokenHolder(tenantId, id),
        ])
      ).rows.map((row) => row.scope);
    expect(await claimsOf()).toEqual(['token-search-index']);
    await eventually(async () => {
      expect((await eventsOf(id)).map((event) => event.type)).toEqual(['TokenCreated', 'TokenCvcRemoved']);
    }, 15_000);
    const [created, removed] = await eventsOf(id);
    const cvcBlind = await vault.searchIndex(tenantId, card.cvc);
    expect(created!.data).toMatchObject({
      search_index_values: expect.arrayContaining([cvcBlind]),
      fingerprint: await vault.fingerprint(tenantId, 'card', card.cvc),
    });
    const derived = (removed!.data as { derived: DerivedFromData }).derived;
    expect(derived).toMatchObject({
      fingerprint: await vault.fingerprint(tenantId, 'card', card.number),
      search_index_values: [await vault.searchIndex(tenantId, '4242')],
      data_claim: 'released',
      index_claims: true,
    });
    expect(derived).not.toHaveProperty('fingerprint_expression');
    expect(derived).not.toHaveProperty('unique_index_values');
    expect(await claimsOf()).toEqual([]);
  });

  it('a CVC given again by an update gets its own time; a deleted token’s job finds nothing to do', async () => {
    const kept = `card-${randomUUID()}`;
    await commands.create(principal, createTokenBody.parse({ id: kept, type: 'card', data: card }), 'create');
    await commands.update(principal, kept, { data: { cvc: '456' } }, 'update');
    const gone = `card-${randomUUID()}`;
    await commands.create(principal, createTokenBody.parse({ id: gone, type: 'card', data: card }), 'create');
    await commands.delete(principal, gone, 'delete');
    await eventually(async () => {
      const types = (await eventsOf(kept)).map((event) => event.type);
      expect(types).toEqual(['TokenCreated', 'TokenUpdated', 'TokenCvcRemoved']);
    }, 15_000);
    const removedFrom = (await ciphertexts(kept)).at(-1)!.sealed;
    expect(await vault.decrypt(tenantId, kept, removedFrom)).not.toHaveProperty('cvc');
    // Its job ran (or runs) and appends nothing: the deleted token's key is gone with it.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await eventsOf(gone)).map((event) => event.type)).toEqual(['TokenCreated', 'TokenDeleted']);
    await expect(
      new Vault(pool, vault.ring).decrypt(tenantId, gone, (await ciphertexts(gone))[0]!.sealed),
    ).rejects.toThrow(TokenKeyDestroyedError);
  });
});
