import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestPool } from '@tokenvault/cqrs/testing';
import {
  eventStoreMigrations,
  ExternalEventStore,
  PostgresEventStore,
  UniqueClaimTaken,
  type EventStore,
} from '@tokenvault/eventstore';
import { tokenKeysSideData } from '@tokenvault/tokens';
import { externalAppendHooks } from './external-store.ts';
import { uniquenessOf } from './projections.ts';
import { allMigrations } from './runtime.ts';

/** A store that writes the append and then loses the answer (an ambiguous failure, left to the repair). */
const answerLostAfterWriting = (inner: EventStore): EventStore => ({
  append: async (stream, appended, options) => {
    await inner.append(stream, appended, options);
    throw new Error('deadline exceeded');
  },
  appendStreams: (appends, options) => inner.appendStreams(appends, options),
  readStream: (stream) => inner.readStream(stream),
  readAll: (options) => inner.readAll(options),
  headPosition: () => inner.headPosition(),
  subscribeAll: (options) => inner.subscribeAll(options),
  claimHolder: (scope, key) => inner.claimHolder(scope, key),
  close: () => inner.close(),
});

/*
 * The composition the runtime makes with EVENTSTORE_URL (the application's uniqueness rules and
 * write-side hooks), over the PostgreSQL store in a database of its own standing in for KurrentDB:
 * the read models, claims and keys are in another database, with no transaction shared.
 */
describe('the runtime’s external-store composition', () => {
  const events = useTestPool(eventStoreMigrations);
  const app = useTestPool(allMigrations, { max: 10 });
  const compose = (inner: EventStore = new PostgresEventStore(events.pool)) =>
    new ExternalEventStore({
      events: inner,
      pool: app.pool,
      uniqueness: uniquenessOf,
      hooks: externalAppendHooks,
    });

  const tenantDeleted = (tenantId: string) => ({
    type: 'TenantDeleted',
    data: { tenant_id: tenantId, deleted_by: randomUUID(), deleted_at: new Date().toISOString() },
    metadata: { tenant_id: tenantId },
  });
  const keysOf = async () =>
    (
      await app.pool.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_keys ORDER BY tenant_id')
    ).rows.map((row) => row.tenant_id);
  const addKeys = async (tenantId: string) =>
    app.pool.query(
      `INSERT INTO tenant_keys (tenant_id, wrapped_data_key, wrapped_fingerprint_key) VALUES ($1, 'w', 'w')`,
      [tenantId],
    );

  it('shreds a deleted tenant’s keys once its deletion is stored, and no other tenant’s', async () => {
    const [deleted, kept] = [randomUUID(), randomUUID()];
    await addKeys(deleted);
    await addKeys(kept);
    const store = compose();
    await store.append(`tenant-${deleted}`, [tenantDeleted(deleted)], { expectedRevision: 'any' });
    expect(await keysOf()).not.toContain(deleted);
    expect(await keysOf()).toContain(kept);
    await store.close();
  });

  it('keeps the keys when the deletion is refused, and shreds them in the repair when the append timed out after storing it', async () => {
    const tenantId = randomUUID();
    await addKeys(tenantId);
    const store = compose();
    await expect(
      store.append(`tenant-${tenantId}`, [tenantDeleted(tenantId)], { expectedRevision: 7 }),
    ).rejects.toThrow(/expected revision/);
    expect(await keysOf()).toContain(tenantId);

    // The store wrote it, the answer was lost: an ambiguous failure, left to the repair.
    const timingOut = compose(answerLostAfterWriting(new PostgresEventStore(events.pool)));
    await expect(
      timingOut.append(`tenant-${tenantId}`, [tenantDeleted(tenantId)], { expectedRevision: 'any' }),
    ).rejects.toThrow('deadline exceeded');
    expect(await keysOf()).toContain(tenantId);
    expect(await store.repairStale(0)).toEqual(['completed']);
    expect(await keysOf()).not.toContain(tenantId);
    await timingOut.close();
    await store.close();
  });

  describe('token keys (stored before the append, never replacing one)', () => {
    const tokenEvent = (type: string, tenantId: string, tokenId: string, ciphertext?: string) => ({
      type,
      data: {
        tenant_id: tenantId,
        token_id: tokenId,
        ...(ciphertext ? { data_ciphertext: ciphertext, expires_at: null } : {}),
      },
      metadata: { tenant_id: tenantId },
    });
    /** A ciphertext sealed under a new key, as the vault seals it, and the side data its append carries. */
    const sealedUnderNewKey = (tenantId: string, tokenId: string) => {
      const ciphertext = `tk:${randomUUID()}`;
      const wrappedKey = `wrapped-${randomUUID()}`;
      const sideData = tokenKeysSideData([
        {
          ciphertext,
          newKey: {
            sealed: ciphertext,
            tenantId,
            tokenId,
            wrappedKey,
            tenantKeyVersion: 1,
            expiresAt: null,
            unwrappedKey: createSecretKey(randomBytes(32)),
          },
        },
      ]);
      return { ciphertext, wrappedKey, sideData };
    };
    const keyOf = async (tenantId: string, tokenId: string) =>
      (
        await app.pool.query<{ wrapped_key: string }>(
          'SELECT wrapped_key FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
          [tenantId, tokenId],
        )
      ).rows[0]?.wrapped_key;

    it('stores a created token’s key with its event and destroys it with the deletion', async () => {
      const store = compose();
      const [tenantId, tokenId] = [randomUUID(), randomUUID()];
      const sealed = sealedUnderNewKey(tenantId, tokenId);
      await store.append(
        `tokens.token-${tokenId}`,
        [tokenEvent('TokenCreated', tenantId, tokenId, sealed.ciphertext)],
        {
          expectedRevision: 'no_stream',
          sideData: sealed.sideData,
        },
      );
      expect(await keyOf(tenantId, tokenId)).toBe(sealed.wrappedKey);
      await store.append(`tokens.token-${tokenId}`, [tokenEvent('TokenDeleted', tenantId, tokenId)], {
        expectedRevision: 0,
      });
      expect(await keyOf(tenantId, tokenId)).toBeUndefined();
      await store.close();
    });

    it('keeps the key of a create whose answer was lost, through a repair by a process that never saw the key', async () => {
      const [tenantId, tokenId] = [randomUUID(), randomUUID()];
      const timingOut = compose(answerLostAfterWriting(new PostgresEventStore(events.pool)));
      const sealed = sealedUnderNewKey(tenantId, tokenId);
      await expect(
        timingOut.append(
          `tokens.token-${tokenId}`,
          [tokenEvent('TokenCreated', tenantId, tokenId, sealed.ciphertext)],
          {
            expectedRevision: 'no_stream',
            sideData: sealed.sideData,
          },
        ),
      ).rejects.toThrow('deadline exceeded');
      // The process that sealed it is gone; another one repairs the append from what was stored
      // (a repair has the events only, never the side data of the append).
      const repairer = compose();
      expect(await repairer.repairStale(0)).toEqual(['completed']);
      expect(await keyOf(tenantId, tokenId)).toBe(sealed.wrappedKey);
      await timingOut.close();
      await repairer.close();
    });

    it('leaves the key of a token whose id a refused create tried to take, and keeps none of its own', async () => {
      const store = compose();
      const [tenantId, tokenId] = [randomUUID(), randomUUID()];
      const first = sealedUnderNewKey(tenantId, tokenId);
      await store.append(
        `tokens.token-${tokenId}`,
        [tokenEvent('TokenCreated', tenantId, tokenId, first.ciphertext)],
        {
          expectedRevision: 'no_stream',
          sideData: first.sideData,
        },
      );
      const second = sealedUnderNewKey(tenantId, tokenId);
      await expect(
        store.append(
          `tokens.token-${tokenId}`,
          [tokenEvent('TokenCreated', tenantId, tokenId, second.ciphertext)],
          {
            expectedRevision: 'no_stream',
            sideData: second.sideData,
          },
        ),
      ).rejects.toThrow();
      expect(await keyOf(tenantId, tokenId)).toBe(first.wrappedKey);
      expect((await new PostgresEventStore(events.pool).readStream(`tokens.token-${tokenId}`)).length).toBe(
        1,
      );
      await store.close();
    });

    it('takes back the key of a create refused for its revision, and refuses a re-encryption before writing anything', async () => {
      const store = compose();
      const [tenantId, tokenId] = [randomUUID(), randomUUID()];
      const refused = sealedUnderNewKey(tenantId, tokenId);
      await expect(
        store.append(
          `tokens.token-${tokenId}`,
          [tokenEvent('TokenCreated', tenantId, tokenId, refused.ciphertext)],
          {
            expectedRevision: 3,
            sideData: refused.sideData,
          },
        ),
      ).rejects.toThrow(/expected revision/);
      expect(await keyOf(tenantId, tokenId)).toBeUndefined();

      const created = sealedUnderNewKey(tenantId, tokenId);
      await store.append(
        `tokens.token-${tokenId}`,
        [tokenEvent('TokenCreated', tenantId, tokenId, created.ciphertext)],
        {
          expectedRevision: 'no_stream',
          sideData: created.sideData,
        },
      );
      const reencrypted = sealedUnderNewKey(tenantId, tokenId);
      await expect(
        store.append(
          `tokens.token-${tokenId}`,
          [tokenEvent('TokenReencrypted', tenantId, tokenId, reencrypted.ciphertext)],
          {
            expectedRevision: 0,
            sideData: reencrypted.sideData,
          },
        ),
      ).rejects.toThrow(/needs the events in PostgreSQL/);
      expect(await keyOf(tenantId, tokenId)).toBe(created.wrappedKey);
      expect((await new PostgresEventStore(events.pool).readStream(`tokens.token-${tokenId}`)).length).toBe(
        1,
      );
      await store.close();
    });
  });

  it('keeps one user per address across concurrent registrations', async () => {
    const store = compose();
    const email = `User-${randomUUID().slice(0, 8)}@Example.com`;
    const register = (userId: string, address: string) =>
      store.append(
        `user-${userId}`,
        [
          {
            type: 'UserRegistered',
            data: { user_id: userId, email: address, created_at: new Date().toISOString() },
            metadata: { tenant_id: randomUUID() },
          },
        ],
        { expectedRevision: 'no_stream' },
      );
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, index) =>
        register(randomUUID(), index % 2 ? email : email.toLowerCase()),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(UniqueClaimTaken);
    }
    await store.close();
  });
});
