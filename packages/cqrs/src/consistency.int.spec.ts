import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotificationHub, createPool, type NotificationHub, type Pool } from '@tokenvault/platform';
import type { Position } from '@tokenvault/eventstore';
import { createTestDatabase, type TestDatabase, eventually } from '@tokenvault/platform/testing';
import { ReadModelConsistency } from './consistency.ts';
import { checkpointChannel, invalidationChannel, projectorMigrations } from './projector.ts';

describe('read-model consistency watcher', () => {
  let database: TestDatabase;
  let pool: Pool;
  let consistency: ReadModelConsistency;
  let notifications: NotificationHub;
  let head: Position | undefined;
  const invalidations: (string | null)[] = [];
  const setCheckpoint = (commit: string, prepare: number) =>
    pool.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ('read-models', $1, $2)
       ON CONFLICT (name) DO UPDATE SET commit_position = $1, prepare_position = $2`,
      [commit, prepare],
    );
  const notifyCheckpoint = (commit: string, prepare: number) =>
    pool.query('SELECT pg_notify($1, $2)', [checkpointChannel, `read-models:${commit}:${prepare}`]);

  beforeAll(async () => {
    database = await createTestDatabase(projectorMigrations);
    pool = createPool({ connectionString: database.url, max: 2 });
    notifications = createNotificationHub(database.url);
    consistency = new ReadModelConsistency({
      notifications,
      inline: false,
      headPosition: async () => head,
      pool,
      projectorName: 'read-models',
      timeoutMs: 5_000,
      pollIntervalMs: 50,
    });
    consistency.onInvalidation((key) => invalidations.push(key));
    await consistency.start();
  });

  afterAll(async () => {
    await consistency?.close();
    await notifications?.close();
    await pool?.end();
    await database?.drop();
  });

  it('wakes a waiter on the checkpoint notification, and times out without one', async () => {
    const waiting = consistency.waitFor({ commit: '10', prepare: '5' });
    await setCheckpoint('10', 5);
    await notifyCheckpoint('10', 5);
    expect(await waiting).toBe(true);
    expect(await consistency.waitFor({ commit: '11', prepare: '6' }, 200)).toBe(false);
  });

  it('follows a checkpoint reset by a rebuild: a write is waited for again until replayed', async () => {
    await setCheckpoint('0', 0);
    await notifyCheckpoint('0', 0);
    await eventually(async () =>
      expect(await consistency.waitFor({ commit: '1', prepare: '1' }, 30)).toBe(false),
    );
    const waiting = consistency.waitFor({ commit: '10', prepare: '5' }, 5_000);
    let settled = false;
    void waiting.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(settled).toBe(false);
    await setCheckpoint('10', 5);
    expect(await waiting).toBe(true);
  });

  it("tells its listeners of this process's invalidations at once, and of other processes' by NOTIFY", async () => {
    invalidations.length = 0;
    consistency.invalidate('principals:this-process');
    expect(invalidations).toEqual(['principals:this-process']);
    await pool.query('SELECT pg_notify($1, $2)', [invalidationChannel, 'principals:another-process']);
    await eventually(async () => expect(invalidations).toContain('principals:another-process'));
    // An empty payload is an invalidation of everything.
    await pool.query('SELECT pg_notify($1, $2)', [invalidationChannel, '']);
    await eventually(async () => expect(invalidations).toContain(null));
  });

  it('reconnects when its connection dies, and then treats every cached value as stale', async () => {
    invalidations.length = 0;
    const killed = await pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
    );
    expect(killed.rowCount).toBe(1);
    await eventually(async () => expect(invalidations).toContain(null));
    // Listening again: an invalidation sent now arrives.
    await eventually(async () => {
      await pool.query('SELECT pg_notify($1, $2)', [invalidationChannel, 'principals:after-reconnect']);
      expect(invalidations).toContain('principals:after-reconnect');
    });
  });

  it('makes a read of the trailing read models wait for every event committed before it', async () => {
    await setCheckpoint('20', 9);
    await notifyCheckpoint('20', 9);
    head = { commit: '20', prepare: '9' };
    expect(await consistency.beforeTrailingRead()).toEqual({});
    head = { commit: '21', prepare: '10' };
    const reading = consistency.beforeTrailingRead();
    let settled = false;
    void reading.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(settled).toBe(false);
    await setCheckpoint('21', 10);
    await notifyCheckpoint('21', 10);
    expect(await reading).toEqual({});
  });

  it('with inline projections, answers a write at once, whatever the projector is doing', async () => {
    const inline = new ReadModelConsistency({
      notifications,
      inline: true,
      headPosition: async () => ({ commit: '999', prepare: '999' }),
      pool,
      projectorName: 'read-models',
      timeoutMs: 100,
    });
    await inline.start();
    expect(await inline.afterWrite({ commit: '999', prepare: '999' })).toEqual({});
    // The trailing read models still wait, and say when they lag.
    expect(await inline.beforeTrailingRead()).toEqual({ 'x-read-model-lagging': 'true' });
    await inline.close();
  });
});
