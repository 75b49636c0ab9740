import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import {
  PostgresEventStore,
  eventStoreMigrations,
  type Position,
  type RecordedEvent,
} from '@tokenvault/eventstore';
import { Checkpoint } from './checkpoint.ts';
import { EventProcessor } from './event-processor.ts';
import { projectorMigrations } from './projector.ts';

describe('EventProcessor', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  const metadata = { tenant_id: randomUUID() };

  /** Appends one event per call, each its own commit (so each can be its own batch). */
  const appendOneByOne = async (types: string[], streamPrefix = 'test-'): Promise<Position> => {
    let last: Position | undefined;
    for (const type of types) {
      ({ position: last } = await store.append(
        `${streamPrefix}${randomUUID()}`,
        [{ type, data: {}, metadata }],
        {
          expectedRevision: 'no_stream',
        },
      ));
    }
    return last!;
  };
  const checkpointMoves = async (name: string) =>
    (
      await pool.query<{ moves: number }>(
        'SELECT count(*)::int AS moves FROM checkpoint_moves WHERE name = $1',
        [name],
      )
    ).rows[0]!.moves;
  const stored = (name: string) => new Checkpoint(pool, name).read();

  const startProcessor = async (
    name: string,
    checkpointCheckIntervalMs: number,
    options: { batchWindowMs?: number; batchSize?: number; eventTypes?: ReadonlySet<string> } = {},
  ) => {
    const handled: RecordedEvent[][] = [];
    const processor = new EventProcessor({
      name,
      store,
      pool,
      logger: createLogger('silent'),
      eventTypes: new Set(['Wanted']),
      checkpointCheckIntervalMs,
      ...options,
      handler: {
        handle(events) {
          handled.push([...events]);
          return Promise.resolve();
        },
      },
    });
    await processor.start();
    await processor.ready();
    return { processor, handled, types: () => handled.flat().map((event) => event.type) };
  };

  beforeAll(async () => {
    database = await createTestDatabase([
      ...eventStoreMigrations,
      ...projectorMigrations,
      {
        id: 'test/checkpoint_moves',
        sql: `CREATE TABLE checkpoint_moves (name text NOT NULL);
              CREATE FUNCTION count_checkpoint_move() RETURNS trigger LANGUAGE plpgsql AS $$
              BEGIN INSERT INTO checkpoint_moves VALUES (NEW.name); RETURN NEW; END $$;
              CREATE TRIGGER counted AFTER UPDATE ON projection_checkpoints
                FOR EACH ROW EXECUTE FUNCTION count_checkpoint_move();`,
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

  // With `eventTypes` it hands the handler only those events, and passes over the others without
  // a transaction each; its checkpoint still ends past them.
  describe('with eventTypes', () => {
    it('hands only its types to the handler and moves the checkpoint past the rest in a few saves', async () => {
      const name = 'only-wanted';
      const { processor, handled, types } = await startProcessor(name, 100);
      try {
        await appendOneByOne(Array.from({ length: 30 }, () => 'Other'));
        await appendOneByOne(['Wanted']);
        const last = await appendOneByOne(Array.from({ length: 30 }, () => 'Other'));
        await eventually(async () => expect(await stored(name)).toEqual(last));
        expect(types()).toEqual(['Wanted']);
        expect(handled).toHaveLength(1);
        // One move for the handled batch, and one per check interval for the passed-over events
        // (60 of them, appended one by one), not one per batch.
        expect(await checkpointMoves(name)).toBeLessThan(15);
      } finally {
        await processor.stop();
      }
    });

    it('saves the position of passed-over events when it stops', async () => {
      const name = 'saved-on-stop';
      const { processor } = await startProcessor(name, 60_000);
      await appendOneByOne(['Wanted']);
      const last = await appendOneByOne(['Other', 'Other', 'Other']);
      // Nothing to observe until the stop: the events reach the processor in process, at once.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await processor.stop();
      expect(await stored(name)).toEqual(last);
    });

    it('starts again from a reset checkpoint instead of saving over it', async () => {
      const name = 'reset-while-passing-over';
      const { processor, types } = await startProcessor(name, 100);
      try {
        await appendOneByOne(['Wanted']);
        const last = await appendOneByOne(['Other']);
        await eventually(async () => expect(await stored(name)).toEqual(last));
        const wantedSoFar = types().length;
        await appendOneByOne(['Other']);
        // As a rebuild does: back to the origin, while this processor has unsaved passed-over events.
        await pool.query(
          "UPDATE projection_checkpoints SET commit_position = '0', prepare_position = 0 WHERE name = $1",
          [name],
        );
        // Every Wanted event so far is handed over again from the origin.
        await eventually(async () => expect(types().length).toBeGreaterThan(wantedSoFar));
      } finally {
        await processor.stop();
      }
    });
  });

  describe('with batchWindowMs', () => {
    // Each on streams of its own (`<name>-…`), apart from the events the other cases appended.
    const processorWith = (name: string, batchWindowMs: number, sizes: number[]) =>
      new EventProcessor({
        name,
        store,
        pool,
        logger: createLogger('silent'),
        streamPrefixes: [`${name}-`],
        batchSize: 5,
        batchWindowMs,
        handler: {
          handle(events) {
            sizes.push(events.length);
            return Promise.resolve();
          },
        },
      });

    it('takes what is appended during the window after a partial batch as one batch', async () => {
      const sizes: number[] = [];
      const processor = processorWith('windowed', 1_000, sizes);
      await processor.start();
      await processor.ready();
      try {
        await appendOneByOne(['Any'], 'windowed-');
        await eventually(() => Promise.resolve(expect(sizes).toEqual([1])));
        // Three commits one after the other, inside the window the first batch opened.
        await appendOneByOne(['Any', 'Any', 'Any'], 'windowed-');
        await eventually(() => Promise.resolve(expect(sizes).toEqual([1, 3])));
      } finally {
        await processor.stop();
      }
    });

    it('takes full batches at once, and stops without waiting out the window', async () => {
      const sizes: number[] = [];
      await appendOneByOne(
        Array.from({ length: 12 }, () => 'Any'),
        'backlog-',
      );
      const processor = processorWith('backlog', 60_000, sizes);
      await processor.start();
      await eventually(
        () => Promise.resolve(expect(sizes.reduce((sum, size) => sum + size, 0)).toBeGreaterThanOrEqual(12)),
        5_000,
      );
      const stopping = performance.now();
      await processor.stop();
      expect(performance.now() - stopping).toBeLessThan(5_000);
    });
  });
});
