import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { PostgresEventStore, eventStoreMigrations } from '@tokenvault/eventstore';
import { EventProcessor } from './event-processor.ts';
import { projectorMigrations } from './projector.ts';

// Two replicas of one processor (one name): the lease holder handles every batch, the other
// stands by, and takes over within the lease time when the holder dies, from the checkpoint.
describe('processor lease', () => {
  const leaseMs = 1_000;
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  const metadata = { tenant_id: randomUUID() };

  const append = async (count: number) => {
    for (let index = 0; index < count; index++) {
      await store.append(`leased-${randomUUID()}`, [{ type: 'Any', data: {}, metadata }], {
        expectedRevision: 'no_stream',
      });
    }
  };
  /** The read model: one row per event handled, the replica that handled it. */
  const handled = async () =>
    (
      await pool.query<{ replica: string; events: number; distinct_events: number }>(
        `SELECT replica, count(*)::int AS events, count(DISTINCT event_id)::int AS distinct_events
         FROM read_model GROUP BY replica ORDER BY replica`,
      )
    ).rows;

  const replica = (name: string, replicaPool: Pool, replicaStore: PostgresEventStore) =>
    new EventProcessor({
      name: 'leased',
      store: replicaStore,
      pool: replicaPool,
      logger: createLogger('silent'),
      leaseMs,
      handler: {
        async handle(events, tx) {
          await tx.query('INSERT INTO read_model (replica, event_id) SELECT $1, unnest($2::uuid[])', [
            name,
            events.map((event) => event.event_id),
          ]);
        },
      },
    });

  beforeAll(async () => {
    database = await createTestDatabase([
      ...eventStoreMigrations,
      ...projectorMigrations,
      {
        id: 'test/read_model',
        sql: `CREATE TABLE read_model (replica text NOT NULL, event_id uuid NOT NULL,
                handled_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
      },
    ]);
    pool = createPool({ connectionString: database.url, max: 4 });
    store = new PostgresEventStore(pool);
  });
  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  it('one replica works, the other stands by and takes over within the lease when it dies', async () => {
    // The first replica on connections of its own: cutting them is its death (no release, no stop).
    const firstPool = createPool({ connectionString: database.url, max: 3 });
    const firstStore = new PostgresEventStore(firstPool);
    const first = replica('first', firstPool, firstStore);
    const second = replica('second', pool, store);
    try {
      await first.start();
      await first.ready();
      await second.start();
      await second.ready();
      await append(20);
      await eventually(async () =>
        expect(await handled()).toEqual([{ replica: 'first', events: 20, distinct_events: 20 }]),
      );
      // Long enough for the standby to have tried the lease a few times: it did no batch work.
      await new Promise((resolve) => setTimeout(resolve, leaseMs));
      expect(await handled()).toEqual([{ replica: 'first', events: 20, distinct_events: 20 }]);

      await firstStore.close();
      await firstPool.end();
      const died = (await pool.query<{ at: Date }>('SELECT clock_timestamp() AS at')).rows[0]!.at;
      await append(20);
      await eventually(async () =>
        expect(await handled()).toEqual([
          { replica: 'first', events: 20, distinct_events: 20 },
          { replica: 'second', events: 20, distinct_events: 20 },
        ]),
      );
      // Within the lease, plus the standby's next try (a third of it), plus the batch itself.
      const { rows: takeover } = await pool.query<{ at: Date }>(
        "SELECT min(handled_at) AS at FROM read_model WHERE replica = 'second'",
      );
      expect(takeover[0]!.at.getTime() - died.getTime()).toBeLessThan(leaseMs + leaseMs / 3 + 500);
      const { rows } = await pool.query<{ all: number; distinct: number }>(
        'SELECT count(*)::int AS all, count(DISTINCT event_id)::int AS distinct FROM read_model',
      );
      expect(rows[0]).toEqual({ all: 40, distinct: 40 });
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it('a stopped holder releases its lease: the standby takes it on its next try, not at expiry', async () => {
    const before = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM read_model')).rows[0]!.n;
    const holder = replica('holder', pool, store);
    const standby = replica('standby', pool, store);
    // The first test's replicas are stopped or dead: the lease is free, or freed within its time.
    await holder.start();
    await append(1);
    await eventually(async () =>
      expect((await handled()).find((row) => row.replica === 'holder')?.events).toBe(1),
    );
    await standby.start();
    await standby.ready();
    const leaseHolder = async () =>
      (await pool.query<{ holder: string }>("SELECT holder FROM processor_leases WHERE name = 'leased'"))
        .rows[0]?.holder;
    const held = await leaseHolder();
    await holder.stop();
    try {
      // Gone, or already the standby's: a holder that died would hold it until it expires.
      expect(await leaseHolder()).not.toBe(held);
      await append(5);
      await eventually(async () =>
        expect((await handled()).find((row) => row.replica === 'standby')?.events).toBe(5),
      );
      const { rows } = await pool.query<{ all: number; distinct: number }>(
        'SELECT count(*)::int AS all, count(DISTINCT event_id)::int AS distinct FROM read_model',
      );
      expect(rows[0]).toEqual({ all: before + 6, distinct: before + 6 });
    } finally {
      await standby.stop();
    }
  });
});
