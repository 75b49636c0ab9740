import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPool } from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase } from '@tokenvault/platform/testing';
import {
  eventStoreMigrations,
  PostgresEventStore,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type InlineProjection,
  type UniquenessRules,
} from '../index.ts';

let database: TestDatabase;
let pool: pg.Pool;
/** Every statement the pool's clients were given, and whether the client was pipelining then. */
let sent: { text: string; pipelined: boolean }[] = [];

beforeAll(async () => {
  database = await createTestDatabase(eventStoreMigrations);
  pool = createPool({
    connectionString: database.url,
    max: 4,
    role: testAppRole,
    applicationName: 'es-pipeline',
  });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      sent.push({
        text: typeof config === 'string' ? config : config.text,
        pipelined: (client as unknown as { pipeline: boolean }).pipeline,
      });
      return query(...args);
    };
  });
  const owner = new pg.Client({ connectionString: database.url });
  await owner.connect();
  try {
    await owner.query(
      `CREATE TABLE pipeline_rows (stream text NOT NULL, event_id uuid PRIMARY KEY);
       GRANT SELECT, INSERT ON pipeline_rows TO ${testAppRole}`,
    );
  } finally {
    await owner.end();
  }
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

beforeEach(() => {
  sent = [];
});

// Writes one row per event and reads nothing back: it can run ahead of the append.
const rowsProjection: InlineProjection = {
  handles: ['Written', 'Claimed'],
  async apply(events, tx) {
    for (const event of events) {
      await tx.query('INSERT INTO pipeline_rows (stream, event_id) VALUES ($1, $2)', [
        event.stream,
        event.event_id,
      ]);
    }
  },
};
const claims: UniquenessRules = (event) =>
  event.type === 'Claimed'
    ? {
        claim: [
          {
            scope: 'pipeline-key',
            key: (event.data as { key: string }).key,
            holder: (event.data as { holder: string }).holder,
          },
        ],
      }
    : undefined;
const metadata = (holder: string) => ({ tenant_id: holder });
const rowsOf = async (stream: string) =>
  (await pool.query('SELECT 1 FROM pipeline_rows WHERE stream = $1', [stream])).rowCount;

describe('PostgresEventStore: an append with its claims and inline rows', () => {
  it('sends BEGIN, the append, its claim, the projection rows and COMMIT pipelined, as one batch', async () => {
    const store = new PostgresEventStore(pool, { inlineProjections: [rowsProjection], uniqueness: claims });
    await store.append(
      'pipeline/1',
      [
        { type: 'Written', data: {}, metadata: metadata('h1') },
        { type: 'Claimed', data: { key: 'k1', holder: 'h1' }, metadata: metadata('h1') },
      ],
      { expectedRevision: 'no_stream' },
    );
    const batch = sent.filter((statement) => !statement.text.includes('pg_notify'));
    expect(batch.map((statement) => statement.text.trim().split(/\s+/)[0])).toEqual([
      'BEGIN',
      'WITH', // the append
      'WITH', // the claim
      'INSERT',
      'INSERT',
      'COMMIT',
    ]);
    expect(batch.every((statement) => statement.pipelined)).toBe(true);
    expect(await rowsOf('pipeline/1')).toBe(2);
    expect(await store.claimHolder('pipeline-key', 'k1')).toBe('h1');
    await store.close();
  });

  it('refuses a wrong expected revision with the same error, keeping none of the rows', async () => {
    const store = new PostgresEventStore(pool, { inlineProjections: [rowsProjection], uniqueness: claims });
    await store.append('pipeline/2', [{ type: 'Written', data: {}, metadata: metadata('h2') }], {
      expectedRevision: 'no_stream',
    });
    await expect(
      store.append('pipeline/2', [{ type: 'Written', data: {}, metadata: metadata('h2') }], {
        expectedRevision: 5,
      }),
    ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    await expect(
      store.append(
        'pipeline/2',
        [{ type: 'Claimed', data: { key: 'k2', holder: 'h2' }, metadata: metadata('h2') }],
        {
          expectedRevision: 'no_stream',
        },
      ),
    ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect(await rowsOf('pipeline/2')).toBe(1);
    expect(await store.claimHolder('pipeline-key', 'k2')).toBeUndefined();
    expect(await store.readStream('pipeline/2')).toHaveLength(1);
    await store.close();
  });

  it('refuses a key held by another with UniqueClaimTaken naming the holder, keeping none of the rows', async () => {
    const store = new PostgresEventStore(pool, { inlineProjections: [rowsProjection], uniqueness: claims });
    await store.append(
      'pipeline/3a',
      [{ type: 'Claimed', data: { key: 'k3', holder: 'h3a' }, metadata: metadata('h3a') }],
      {
        expectedRevision: 'no_stream',
      },
    );
    const refused = await store
      .append(
        'pipeline/3b',
        [
          { type: 'Written', data: {}, metadata: metadata('h3b') },
          { type: 'Claimed', data: { key: 'k3', holder: 'h3b' }, metadata: metadata('h3b') },
        ],
        { expectedRevision: 'no_stream' },
      )
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UniqueClaimTaken);
    expect(refused).toMatchObject({ scope: 'pipeline-key', holder: 'h3a' });
    expect(await rowsOf('pipeline/3b')).toBe(0);
    expect(await store.readStream('pipeline/3b')).toEqual([]);
    await store.close();
  });

  it('runs a projection that needs the stored events after the append, statement by statement', async () => {
    const positions: InlineProjection = {
      handles: ['Written'],
      async apply(events, tx) {
        for (const event of events) {
          await tx.query('INSERT INTO pipeline_rows (stream, event_id) VALUES ($1 || $2::text, $3)', [
            event.stream,
            event.position.prepare,
            event.event_id,
          ]);
        }
      },
    };
    const store = new PostgresEventStore(pool, { inlineProjections: [positions] });
    const appended = await store.append(
      'pipeline/4',
      [{ type: 'Written', data: {}, metadata: metadata('h4') }],
      {
        expectedRevision: 'no_stream',
      },
    );
    expect(await rowsOf(`pipeline/4${appended.position.prepare}`)).toBe(1);
    expect(
      sent.filter((statement) => statement.text === 'BEGIN').map((statement) => statement.pipelined),
    ).toEqual([false]);
    await store.close();
  });
});
