import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, Problem, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreMigrations, PostgresEventStore, type EventStore } from '@tokenvault/eventstore';
import { executeCommand } from './command.ts';
import type { Decider, DomainEvent } from './decider.ts';

type Counted = DomainEvent<'Counted', { by: string }>;

/** Appends one event per command, unless the stream already holds one by the same writer. */
const onceEach: Decider<string[], { by: string }, Counted> = {
  initialState: () => [],
  evolve: (writers, event) => [...writers, event.data.by],
  decide: (command, writers) =>
    writers.includes(command.by) ? [] : [{ type: 'Counted', data: { by: command.by } }],
};

const metadata = { tenant_id: '00000000-0000-4000-8000-000000000000' };

describe('executeCommand retries a write another writer got to first', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;

  beforeAll(async () => {
    database = await createTestDatabase(eventStoreMigrations);
    pool = createPool({ connectionString: database.url, max: 10 });
    store = new PostgresEventStore(pool);
  });
  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  /** The real store, with another writer appending to the stream right after each of the first `times` reads. */
  function interfered(times: number): EventStore & { reads: number } {
    const interfering = Object.create(store) as EventStore & { reads: number };
    interfering.reads = 0;
    interfering.readStream = async (stream: string) => {
      const history = await store.readStream(stream);
      if (interfering.reads++ < times) {
        await store.append(
          stream,
          [{ type: 'Counted', data: { by: `other-${interfering.reads}` }, metadata }],
          {
            expectedRevision: 'any',
          },
        );
      }
      return history;
    };
    return interfering;
  }

  it('decides again on what the stream now holds, and succeeds within the bound', async () => {
    const interfering = interfered(3);
    const outcome = await executeCommand(interfering, 'counter-a', onceEach, { by: 'me' }, metadata, {
      maxAttempts: 4,
    });
    expect(interfering.reads).toBe(4);
    expect(outcome.state).toEqual(['other-1', 'other-2', 'other-3', 'me']);
  });

  it('answers 409 once the bound is reached, having appended nothing', async () => {
    const interfering = interfered(100);
    const thrown = await executeCommand(interfering, 'counter-b', onceEach, { by: 'me' }, metadata, {
      maxAttempts: 3,
      conflictDetail: 'Too busy.',
    }).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(Problem);
    expect(thrown).toMatchObject({ status: 409, detail: 'Too busy.' });
    expect(interfering.reads).toBe(3);
    const events = await store.readStream('counter-b');
    expect(events.map((event) => (event.data as { by: string }).by)).not.toContain('me');
  });

  it('a create that finds the stream taken re-reads it (newStream skips only the first read)', async () => {
    await store.append('counter-c', [{ type: 'Counted', data: { by: 'me' }, metadata }], {
      expectedRevision: 'no_stream',
    });
    const outcome = await executeCommand(store, 'counter-c', onceEach, { by: 'me' }, metadata, {
      newStream: true,
    });
    expect(outcome).toMatchObject({ events: [], position: null, state: ['me'] });
  });

  it('many identical writers of one stream all succeed, and the event is appended once', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () => executeCommand(store, 'counter-d', onceEach, { by: 'me' }, metadata)),
    );
    expect(outcomes.every((outcome) => outcome.state.includes('me'))).toBe(true);
    expect(await store.readStream('counter-d')).toHaveLength(1);
  });
});
