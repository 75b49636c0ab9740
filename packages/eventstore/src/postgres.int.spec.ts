import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase, eventually } from '@tokenvault/platform/testing';
import { eventStoreContract } from './contract.ts';
import { appendToStream, eventStoreMigrations, PostgresEventStore } from './postgres.ts';
import type { RecordedEvent } from './port.ts';

let database: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase(eventStoreMigrations);
  // The app role, not the owner: proves the migration grants what the store needs.
  pool = createPool({
    connectionString: database.url,
    max: 20,
    role: testAppRole,
    applicationName: 'es-test',
  });
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

// A slow fallback poll, so that prompt deliveries prove the NOTIFY wake-up.
const storeOptions = { pollIntervalMs: 5_000, fenceRetryMaxDelayMs: 50 };

eventStoreContract('postgres', {
  async createStore() {
    return new PostgresEventStore(pool, storeOptions);
  },
  async cleanup() {},
  async appendInOpenTransaction(stream, events) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await appendToStream(client, stream, events, { expectedRevision: 'any' });
      return {
        result,
        async commit() {
          try {
            await client.query('COMMIT');
          } finally {
            client.release();
          }
        },
      };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
      throw error;
    }
  },
});

describe('PostgresEventStore', () => {
  it('reconnects its LISTEN connection when it drops', async () => {
    const listenName = `es-listen-${Date.now()}`;
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      createListenClient: () =>
        new pg.Client({ connectionString: database.url, application_name: listenName }),
    });
    const received: RecordedEvent[] = [];
    const subscription = store.subscribeAll({
      streamPrefixes: ['reconnect/'],
      onEvents: async (batch) => void received.push(...batch),
    });
    const listening = async () =>
      (
        await pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
          listenName,
        ])
      ).rows[0].n as number;
    await eventually(async () => expect(await listening()).toBe(1));

    // The owner connection: the app role may not terminate another role's backend.
    const owner = new pg.Client({ connectionString: database.url });
    await owner.connect();
    try {
      await owner.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [listenName],
      );
    } finally {
      await owner.end();
    }
    await eventually(async () => expect(await listening()).toBe(0));
    await eventually(async () => expect(await listening()).toBe(1));

    const started = Date.now();
    await store.append('reconnect/1', [{ type: 'E', data: {}, metadata: { tenant_id: 't' } }], {
      expectedRevision: 'no_stream',
    });
    await eventually(async () => expect(received).toHaveLength(1));
    expect(Date.now() - started).toBeLessThan(1_000);
    await subscription.stop();
    await store.close();
    expect(await listening()).toBe(0);
  });

  it('closes without ending the pool', async () => {
    const store = new PostgresEventStore(pool, storeOptions);
    store.subscribeAll({ onEvents: async () => {} });
    await store.close();
    expect(() => store.subscribeAll({ onEvents: async () => {} })).toThrow(/closed/);
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});
