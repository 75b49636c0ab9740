import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLogger,
  createPool,
  eventStoreEventsReadTotal,
  eventStoreLogReadsTotal,
  type Pool,
} from '@tokenvault/platform';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { PostgresEventStore, eventStoreMigrations, type Position } from '@tokenvault/eventstore';
import { Checkpoint } from './checkpoint.ts';
import { EventProcessor } from './event-processor.ts';
import { projectorMigrations } from './projector.ts';

// Every processor of a process subscribes to one event store: the store reads each batch of new
// events once and hands it to all of them (LogFeed), each keeping its own checkpoint and transaction.
describe('processors sharing one read of the log', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  const metadata = { tenant_id: randomUUID() };
  const logged: Position[] = [];

  const append = async (types: string[]): Promise<void> => {
    for (const type of types) {
      const { position } = await store.append(`shared-${randomUUID()}`, [{ type, data: {}, metadata }], {
        expectedRevision: 'no_stream',
      });
      logged.push(position);
    }
  };
  const counted = async (reader: 'shared' | 'own') => {
    const value = async (metric: typeof eventStoreLogReadsTotal) =>
      (await metric.get()).values.find((sample) => sample.labels.reader === reader)?.value ?? 0;
    return { reads: await value(eventStoreLogReadsTotal), events: await value(eventStoreEventsReadTotal) };
  };
  /** Each processor's handled events, in the order its transactions committed them. */
  const handledBy = async (processor: string) =>
    (
      await pool.query<{ commit: string; prepare: string }>(
        `SELECT commit_position::text AS commit, prepare_position::text AS prepare
         FROM handled WHERE processor = $1 ORDER BY seq`,
        [processor],
      )
    ).rows;

  const startProcessor = async (
    name: string,
    options: { fails?: () => boolean; batchSize?: number } = {},
  ) => {
    const fails = options.fails ?? (() => false);
    const processor = new EventProcessor({
      name,
      store,
      pool,
      logger: createLogger('silent'),
      maxBackoffMs: 500,
      ...(options.batchSize ? { batchSize: options.batchSize } : {}),
      handler: {
        async handle(events, tx) {
          if (fails() && events.some((event) => event.type === 'Poison')) throw new Error('poisoned');
          await tx.query(
            `INSERT INTO handled (processor, commit_position, prepare_position)
             SELECT $1, c::xid8, p FROM unnest($2::text[], $3::bigint[]) AS e(c, p)`,
            [
              name,
              events.map((event) => event.position.commit),
              events.map((event) => event.position.prepare),
            ],
          );
        },
      },
    });
    await processor.start();
    await processor.ready();
    return processor;
  };

  beforeAll(async () => {
    database = await createTestDatabase([
      ...eventStoreMigrations,
      ...projectorMigrations,
      {
        id: 'test/handled',
        sql: `CREATE TABLE handled (seq bigserial PRIMARY KEY, processor text NOT NULL,
                commit_position xid8 NOT NULL, prepare_position bigint NOT NULL)`,
      },
    ]);
    pool = createPool({ connectionString: database.url, max: 8 });
    // No poll to speak of: every read below follows an append of this process.
    store = new PostgresEventStore(pool, { pollIntervalMs: 60_000, fenceRetryMaxDelayMs: 20 });
  });
  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  it('reads each new event once for all of them, and each gets every event in order', async () => {
    const names = ['first', 'second', 'third', 'fourth'];
    const processors = [];
    for (const name of names) processors.push(await startProcessor(name));
    try {
      const shared = await counted('shared');
      const own = await counted('own');
      // One commit at a time, each handled by all four before the next: a batch per commit.
      for (let index = 0; index < 30; index++) {
        await append(['Any']);
        await eventually(async () => {
          for (const name of names) expect(await handledBy(name)).toHaveLength(logged.length);
        });
      }
      for (const name of names) expect(await handledBy(name)).toEqual(logged);
      // Four processors, 30 events: each event read once (without the shared read: 120).
      expect((await counted('shared')).events - shared.events).toBe(30);
      expect((await counted('own')).reads - own.reads).toBe(0);
      for (const name of names) expect(await new Checkpoint(pool, name).read()).toEqual(logged.at(-1));
    } finally {
      for (const processor of processors) await processor.stop();
    }
  });

  it('a failing processor restarts alone and catches up; the others neither wait nor repeat', async () => {
    let poisoned = true;
    const healthy = ['steady-a', 'steady-b', 'steady-c'];
    const processors = [];
    for (const name of healthy) processors.push(await startProcessor(name));
    // An event per batch: it fails on the poison alone, having handled everything before it.
    const flaky = await startProcessor('flaky', { fails: () => poisoned, batchSize: 1 });
    processors.push(flaky);
    try {
      const before = logged.length;
      await append(['Any', 'Any', 'Poison', 'Any', 'Any']);
      // The others go on past the poison while the flaky one fails and restarts from its checkpoint.
      await eventually(async () => {
        for (const name of healthy) expect(await handledBy(name)).toHaveLength(logged.length);
      });
      await append(['Any', 'Any']);
      await eventually(async () => {
        for (const name of healthy) expect(await handledBy(name)).toHaveLength(logged.length);
      });
      // It handled everything before the poison, and stays there.
      await eventually(async () => expect(await handledBy('flaky')).toEqual(logged.slice(0, before + 2)));
      expect(await new Checkpoint(pool, 'flaky').read()).toEqual(logged[before + 1]);
      for (const name of healthy) expect(await new Checkpoint(pool, name).read()).toEqual(logged.at(-1));

      // Healed: it reads on its own from its checkpoint, catches up, and joins the shared read again.
      poisoned = false;
      await eventually(async () => expect(await handledBy('flaky')).toEqual(logged));
      await eventually(async () => {
        const own = await counted('own');
        const shared = await counted('shared');
        await append(['Any']);
        for (const name of [...healthy, 'flaky'])
          await eventually(async () => expect(await handledBy(name)).toEqual(logged));
        // Rejoined: the last append was read once, by the shared read alone.
        expect((await counted('own')).events).toBe(own.events);
        expect((await counted('shared')).events).toBe(shared.events + 1);
      });
      for (const name of [...healthy, 'flaky']) {
        expect(await handledBy(name)).toEqual(logged);
        expect(await new Checkpoint(pool, name).read()).toEqual(logged.at(-1));
      }
    } finally {
      for (const processor of processors) await processor.stop();
    }
  });
});
