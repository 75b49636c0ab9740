import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, withTransaction, type PoolClient } from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreContract, uniquenessContract } from './contract.ts';
import {
  appendToStream,
  eventStoreMigrations,
  ExternalEventStore,
  PostgresEventStore,
  WrongExpectedRevisionError,
  type AppendHook,
  type EventStore,
} from './index.ts';
import { appendAndKill } from './testing/crash.ts';
import { contractUniquenessRules, invited } from './testing/claims-fixture.ts';

/*
 * The external-store composition over a real store with no transaction shared with the claims:
 * the PostgreSQL adapter in a database of its own stands in for KurrentDB, the claims and pending
 * appends live in another database. What holds here holds for any adapter behind the port.
 */

let eventsDatabase: TestDatabase;
let claimsDatabase: TestDatabase;
let eventsPool: pg.Pool;
let claimsPool: pg.Pool;

beforeAll(async () => {
  [eventsDatabase, claimsDatabase] = await Promise.all([
    createTestDatabase(eventStoreMigrations),
    createTestDatabase(eventStoreMigrations),
  ]);
  eventsPool = createPool({ connectionString: eventsDatabase.url, max: 30, role: testAppRole });
  claimsPool = createPool({ connectionString: claimsDatabase.url, max: 30, role: testAppRole });
});

afterAll(async () => {
  await Promise.all([eventsPool?.end(), claimsPool?.end()]);
  await Promise.all([eventsDatabase?.drop(), claimsDatabase?.drop()]);
});

// A fallback poll far slower than the waits of the specs, so that deliveries in time prove the
// wake-up (as in postgres.int.spec.ts).
const eventsStore = () =>
  new PostgresEventStore(eventsPool, { pollIntervalMs: 60_000, fenceRetryMaxDelayMs: 50 });
const composed = (options: { repairGraceMs?: number; hooks?: AppendHook[] } = {}) =>
  new ExternalEventStore({
    events: eventsStore(),
    pool: claimsPool,
    uniqueness: contractUniquenessRules,
    ...options,
  });

eventStoreContract('external composition over PostgreSQL in a database of its own', {
  async createStore() {
    return composed();
  },
  async cleanup() {},
  // Reads pass through the composition: a late commit in the events database is one for it too.
  async appendInOpenTransaction(stream, events) {
    const client = await eventsPool.connect();
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

let uniquenessStore: ExternalEventStore;
uniquenessContract('external composition over PostgreSQL in a database of its own', {
  async createStore() {
    uniquenessStore = composed();
    return uniquenessStore;
  },
  async cleanup() {},
  crash: {
    appendAndKill: (stage, stream, events) =>
      appendAndKill(stage, stream, events, {
        CLAIMS_DATABASE_URL: claimsDatabase.url,
        EVENTS_DATABASE_URL: eventsDatabase.url,
      }),
    async repairNow() {
      await uniquenessStore.repairStale(0);
    },
  },
});

describe('ExternalEventStore', () => {
  const count = async (pool: pg.Pool, table: string) =>
    (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;

  it('keeps events and claims apart: no event in the claims database, no claim in the events one', async () => {
    const store = composed();
    await store.append('apart/1', [invited('apart-1', 'apart@example.com')], {
      expectedRevision: 'no_stream',
    });
    expect(await store.claimHolder('contract-email', 'apart@example.com')).toBe('apart-1');
    expect(await count(claimsPool, 'es_events')).toBe(0);
    expect(await count(eventsPool, 'es_unique_claims')).toBe(0);
    // Settled: nothing is left pending.
    expect(await count(claimsPool, 'es_pending_appends')).toBe(0);
    await store.close();
  });

  it('repairs a stale reservation when a new claimant meets it (on retry), without waiting for the sweep', async () => {
    const store = composed({ repairGraceMs: 300 });
    await appendAndKill('after-claim', 'retry/dead', [invited('retry-dead', 'retry@example.com')], {
      CLAIMS_DATABASE_URL: claimsDatabase.url,
      EVENTS_DATABASE_URL: eventsDatabase.url,
    });
    await expect(
      store.append('retry/rival', [invited('retry-rival', 'retry@example.com')], {
        expectedRevision: 'no_stream',
      }),
    ).rejects.toMatchObject({ name: 'UniqueClaimTaken', holder: 'retry-dead' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    await store.append('retry/rival', [invited('retry-rival', 'retry@example.com')], {
      expectedRevision: 'no_stream',
    });
    expect(await store.claimHolder('contract-email', 'retry@example.com')).toBe('retry-rival');
    await store.close();
  });

  it('leaves an unsettled append to the sweep until its grace is over, then settles it', async () => {
    const store = composed({ repairGraceMs: 60_000 });
    await appendAndKill('after-append', 'sweep/dead', [invited('sweep-dead', 'sweep@example.com')], {
      CLAIMS_DATABASE_URL: claimsDatabase.url,
      EVENTS_DATABASE_URL: eventsDatabase.url,
    });
    // Within the grace, the sweep leaves it (the append might still be on its way).
    expect(await store.repairStale()).toEqual([]);
    expect(await store.claimHolder('contract-email', 'sweep@example.com')).toBeUndefined();
    expect(await store.repairStale(0)).toEqual(['completed']);
    expect(await store.claimHolder('contract-email', 'sweep@example.com')).toBe('sweep-dead');
    expect(await store.repairStale(0)).toEqual([]);
    await store.close();
  });

  it('reports an append that outlived the grace and found its reservation released', async () => {
    const reported: unknown[] = [];
    const inner = eventsStore();
    const slow: EventStore = {
      append: async (stream, events, options) => {
        await new Promise((resolve) => setTimeout(resolve, 600));
        return inner.append(stream, events, options);
      },
      appendStreams: (appends, options) => inner.appendStreams(appends, options),
      readStream: (stream) => inner.readStream(stream),
      readAll: (options) => inner.readAll(options),
      headPosition: () => inner.headPosition(),
      subscribeAll: (options) => inner.subscribeAll(options),
      claimHolder: (scope, key) => inner.claimHolder(scope, key),
      close: () => inner.close(),
    };
    const store = new ExternalEventStore({
      events: slow,
      pool: claimsPool,
      uniqueness: contractUniquenessRules,
      repairGraceMs: 200,
      onBackgroundError: (error) => reported.push(error),
    });
    const appending = store.append('slow/1', [invited('slow-1', 'slow@example.com')], {
      expectedRevision: 'no_stream',
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Past the grace and not in its stream yet: the repair takes it for a crash and releases it.
    expect(await store.repairStale()).toEqual(['released']);
    await appending;
    expect(await store.claimHolder('contract-email', 'slow@example.com')).toBeUndefined();
    expect(reported).toHaveLength(1);
    expect(String(reported[0])).toMatch(/outlived the repair grace and lost its contract-email claim/);
    expect(String(reported[0])).not.toContain('slow@example.com');
    await store.close();
  });

  describe('hooks', () => {
    beforeAll(async () => {
      const owner = new pg.Client({ connectionString: claimsDatabase.url });
      await owner.connect();
      try {
        await owner.query(
          `CREATE TABLE hook_keys (event_id uuid PRIMARY KEY, state text NOT NULL);
           GRANT SELECT, INSERT, UPDATE, DELETE ON hook_keys TO ${testAppRole}`,
        );
      } finally {
        await owner.end();
      }
    });

    // Like a per-token key: written before the append, kept after it, destroyed when it failed.
    const keys: AppendHook = {
      handles: ['Keyed'],
      async before(events, tx) {
        for (const event of events)
          await tx.query(`INSERT INTO hook_keys VALUES ($1, 'written')`, [event.event_id]);
      },
      async after(events, tx) {
        for (const event of events) {
          await tx.query(`UPDATE hook_keys SET state = 'stored' WHERE event_id = $1`, [event.event_id]);
        }
      },
      async failed(events, tx) {
        for (const event of events)
          await tx.query('DELETE FROM hook_keys WHERE event_id = $1', [event.event_id]);
      },
    };
    const stateOf = async (eventId: string) =>
      (
        await claimsPool.query<{ state: string }>('SELECT state FROM hook_keys WHERE event_id = $1', [
          eventId,
        ])
      ).rows[0]?.state;
    const keyed = (eventId: string) => ({
      event_id: eventId,
      type: 'Keyed',
      data: {},
      metadata: { tenant_id: 't' },
    });

    it('runs before ahead of the append and after once it is stored; failed undoes before when it is refused', async () => {
      const store = composed({ hooks: [keys] });
      const stored = crypto.randomUUID();
      // `before` committed before the external append began: the hook's row is there while it runs.
      let seenDuringAppend: string | undefined;
      const inner = eventsStore();
      const watched: EventStore = {
        append: async (stream, events, options) => {
          seenDuringAppend = await stateOf(stored);
          return inner.append(stream, events, options);
        },
        appendStreams: (appends, options) => inner.appendStreams(appends, options),
        readStream: (stream) => inner.readStream(stream),
        readAll: (options) => inner.readAll(options),
        headPosition: () => inner.headPosition(),
        subscribeAll: (options) => inner.subscribeAll(options),
        claimHolder: (scope, key) => inner.claimHolder(scope, key),
        close: () => inner.close(),
      };
      const watching = new ExternalEventStore({ events: watched, pool: claimsPool, hooks: [keys] });
      await watching.append('hooks/1', [keyed(stored)], { expectedRevision: 'no_stream' });
      expect(seenDuringAppend).toBe('written');
      expect(await stateOf(stored)).toBe('stored');
      await watching.close();

      const refused = crypto.randomUUID();
      await expect(
        store.append('hooks/1', [keyed(refused)], { expectedRevision: 'no_stream' }),
      ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await stateOf(refused)).toBeUndefined();
      expect(await count(claimsPool, 'es_pending_appends')).toBe(0);
      await store.close();
    });

    it('a hook that throws in before stops the append: nothing stored, nothing reserved', async () => {
      const failing: AppendHook = {
        handles: ['Keyed'],
        async before() {
          throw new Error('no key today');
        },
      };
      const store = composed({ hooks: [failing] });
      await expect(
        store.append('hooks/2', [invited('hooks-2', 'hooks@example.com'), keyed(crypto.randomUUID())], {
          expectedRevision: 'no_stream',
        }),
      ).rejects.toThrow('no key today');
      expect(await store.readStream('hooks/2')).toEqual([]);
      expect(await store.claimHolder('contract-email', 'hooks@example.com')).toBeUndefined();
      await withTransaction(claimsPool, async (tx: PoolClient) => {
        const { rows } = await tx.query(`SELECT 1 FROM es_unique_claims WHERE key = 'hooks@example.com'`);
        expect(rows).toEqual([]);
      });
      await store.close();
    });
  });
});
