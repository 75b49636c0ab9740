import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { PostgresEventStore, comparePositions, type Position } from '@tokenvault/eventstore';
import { Projector, Checkpoint, rebuildReadModels } from '@tokenvault/cqrs';
import { allMigrations } from './runtime.ts';
import { readModelsProjectorName } from './projections.ts';
import { crashTestProjections } from './testing/projector-process.ts';

const tokenCount = 2_000;
const deletedCount = 400;

async function snapshot(pool: Pool): Promise<Record<string, string[]>> {
  const tables = [...new Set(crashTestProjections.flatMap((projection) => projection.tables))];
  const result: Record<string, string[]> = {};
  for (const table of tables) {
    const rows = await pool.query<{ row: string }>(`SELECT t::text AS row FROM ${table} t ORDER BY 1`);
    result[table] = rows.rows.map((row) => row.row);
  }
  return result;
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('projector crash and rebuild', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  let last: Position;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase([
      ...allMigrations,
      { id: 'test/applied_events', sql: 'CREATE TABLE applied_events (event_id uuid NOT NULL)' },
    ]);
    pool = createPool({ connectionString: database.url, max: 8 });
    store = new PostgresEventStore(pool);
    const tenantId = randomUUID();
    const metadata = { tenant_id: tenantId, actor_id: randomUUID(), actor_type: 'application' as const };
    const ids = Array.from({ length: tokenCount }, () => randomUUID());
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < ids.length) {
          const index = next++;
          const id = ids[index]!;
          const created = {
            type: 'TokenCreated',
            data: {
              token_id: id,
              tenant_id: tenantId,
              type: 'token',
              data_ciphertext: `v1.sealed-${index}`,
              containers: ['/general/high/'],
              metadata: { index: String(index) },
              fingerprint: `fp-${index % 50}`,
              created_by: metadata.actor_id,
              created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
            },
            metadata,
          };
          const deleted = {
            type: 'TokenDeleted',
            data: {
              token_id: id,
              tenant_id: tenantId,
              deleted_by: metadata.actor_id,
              deleted_at: '2026-02-01T00:00:00Z',
            },
            metadata,
          };
          await store.append(
            `tokens.token-${tenantId}-${id}`,
            index < deletedCount ? [created, deleted] : [created],
            {
              expectedRevision: 'no_stream',
            },
          );
        }
      }),
    );
    // The snapshot fence holds back events committed after a transaction still open elsewhere on
    // the server (other test files): the last position is the one of the last of them all.
    const totalEvents = tokenCount + deletedCount;
    let all = await store.readAll({ limit: totalEvents });
    await waitUntil(
      async () => (all = await store.readAll({ limit: totalEvents })).length === totalEvents,
      'every event to be visible',
    );
    last = all.at(-1)!.position;
  });

  afterAll(async () => {
    child?.kill('SIGKILL');
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  const appliedRows = async () =>
    (
      await pool.query<{ total: number; distinct: number }>(
        'SELECT count(*)::int AS total, count(DISTINCT event_id)::int AS distinct FROM applied_events',
      )
    ).rows[0]!;
  const caughtUp = async () => {
    const checkpoint = await new Checkpoint(pool, readModelsProjectorName).read();
    return checkpoint !== undefined && comparePositions(checkpoint, last) >= 0;
  };

  it('killed mid-stream, restarted, it applies every event exactly once and equals a rebuild from zero', async () => {
    const totalEvents = tokenCount + deletedCount;
    child = fork(new URL('./testing/projector-process.ts', import.meta.url).pathname, [], {
      execArgv: [],
      env: { ...process.env, DATABASE_URL: database.url, PROJECTOR_BATCH_SIZE: '10' },
      stdio: 'inherit',
    });
    await waitUntil(async () => (await appliedRows()).total >= 300, 'the child projector to make progress');
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    const atCrash = await appliedRows();
    expect(atCrash.total).toBeLessThan(totalEvents);

    const projector = new Projector({
      name: readModelsProjectorName,
      store,
      pool,
      projections: crashTestProjections,
      logger: createLogger('warn'),
      batchSize: 50,
      checkpointCheckIntervalMs: 100,
    });
    await projector.start();
    try {
      await waitUntil(caughtUp, 'the restarted projector to catch up');
      expect(await appliedRows()).toEqual({ total: totalEvents, distinct: totalEvents });
      const live = await snapshot(pool);
      expect(live.tokens).toHaveLength(tokenCount - deletedCount);

      await rebuildReadModels(pool, readModelsProjectorName, { inline: [], projector: crashTestProjections });
      expect((await snapshot(pool)).tokens).toEqual([]);
      await waitUntil(caughtUp, 'the rebuild from zero');
      expect(await snapshot(pool)).toEqual(live);
    } finally {
      await projector.stop();
    }
  });
});
