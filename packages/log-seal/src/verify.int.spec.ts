import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreMigrations, PostgresEventStore, type NewEvent } from '@tokenvault/eventstore';
import { projectorMigrations } from '@tokenvault/cqrs';
import { logSealMigrations } from './migrations.ts';
import { createLogSealer } from './sealer.ts';
import { SealSigner } from './seal.ts';
import { verifyLog, type LogVerification } from './verify.ts';
import { readSeals } from './postgres/read-seals.ts';

const migrations = [...eventStoreMigrations, ...projectorMigrations, ...logSealMigrations];
const streams = 60;
const eventsPerStream = 5;
const total = streams * eventsPerStream;

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sealedCount = async (pool: Pool) =>
  (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM log_sealed_events')).rows[0]!.n;

/** Appends `count` streams of five events each, eight appends at a time. */
async function appendStreams(store: PostgresEventStore, count: number): Promise<void> {
  const tenantId = randomUUID();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const index = next++;
        const events: NewEvent[] = Array.from({ length: eventsPerStream }, (_, revision) => ({
          type: revision === 0 ? 'TokenCreated' : 'TokenUpdated',
          data: { index, revision, data_ciphertext: `v1.sealed-${index}-${revision}` },
          metadata: { tenant_id: tenantId, actor_type: 'application' as const },
        }));
        await store.append(`tokens.token-${tenantId}-${index}`, events, { expectedRevision: 'no_stream' });
      }
    }),
  );
}

describe('verifyLog', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  const signer = new SealSigner(Buffer.alloc(32, 3).toString('base64'));

  beforeAll(async () => {
    database = await createTestDatabase(migrations);
    pool = createPool({ connectionString: database.url, max: 6 });
    store = new PostgresEventStore(pool);
    await appendStreams(store, streams);
    const sealer = createLogSealer({
      store,
      pool,
      logger: createLogger('warn'),
      batchSize: 40,
      intervalMs: 0,
      signer,
    });
    await sealer.start();
    try {
      await waitUntil(async () => (await sealedCount(pool)) === total, 'every event to be sealed');
    } finally {
      await sealer.stop();
    }
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  const verify = (options: Partial<Parameters<typeof verifyLog>[0]> = {}) =>
    verifyLog({ store, db: pool, pageSize: 64, ...options });
  /** The events in the port's order, as the tests pick them. */
  const events = () => store.readAll({ limit: total + 10 });
  const sealOf = async (eventId: string) =>
    (
      await pool.query<{ seal_number: number }>(
        'SELECT seal_number::int FROM log_sealed_events WHERE event_id = $1',
        [eventId],
      )
    ).rows[0]!.seal_number;

  /** Tampers, verifies, and puts the table back as it was. */
  async function tampered(sql: string[], restore: string[]): Promise<LogVerification> {
    for (const statement of sql) await pool.query(statement);
    try {
      return await verify();
    } finally {
      for (const statement of restore) await pool.query(statement);
      expect((await verify()).ok).toBe(true);
    }
  }

  it('an untouched log verifies: every seal, every event, signatures included', async () => {
    const result = await verify({ publicKey: signer.publicKey });
    expect(result).toMatchObject({ ok: true, events: total, unsealed: 0 });
    expect(result.seals).toBeGreaterThanOrEqual(Math.ceil(total / 40));
    const seals = await readSeals(pool, 1, 10_000);
    expect(seals.map((seal) => seal.number)).toEqual(seals.map((_, i) => i + 1));
    expect(result.lastGoodSeal).toEqual({ number: seals.at(-1)!.number, seal_hash: seals.at(-1)!.seal_hash });
  });

  it('one event’s data changed: names it (id, global position) and its seal', async () => {
    const target = (await events())[123]!;
    const result = await tampered(
      [
        `UPDATE es_events SET data = jsonb_set(data, '{index}', '9999') WHERE event_id = '${target.event_id}'`,
      ],
      [
        `UPDATE es_events SET data = jsonb_set(data, '{index}', '${(target.data as { index: number }).index}') WHERE event_id = '${target.event_id}'`,
      ],
    );
    expect(result.ok).toBe(false);
    expect(result.problem).toMatchObject({
      kind: 'altered',
      event: { event_id: target.event_id, global_position: target.position.prepare },
      seal: { number: await sealOf(target.event_id) },
    });
    expect(result.problem!.message).toContain(target.event_id);
    // Everything before it was checked.
    expect(result.events).toBe(123);
  });

  it('one event deleted: names it', async () => {
    const target = (await events())[200]!;
    await pool.query('CREATE TABLE deleted_event AS SELECT * FROM es_events WHERE event_id = $1', [
      target.event_id,
    ]);
    const result = await tampered(
      [`DELETE FROM es_events WHERE event_id = '${target.event_id}'`],
      ['INSERT INTO es_events SELECT * FROM deleted_event', 'DROP TABLE deleted_event'],
    );
    expect(result.problem).toMatchObject({
      kind: 'deleted',
      event: { event_id: target.event_id, global_position: target.position.prepare },
      seal: { number: await sealOf(target.event_id) },
    });
  });

  it('a forged event inserted among sealed ones: names it', async () => {
    const before = (await events())[57]!;
    const forged = randomUUID();
    // In the transaction of a sealed event: the port reads it between sealed events.
    const result = await tampered(
      [
        `INSERT INTO es_events (transaction_id, stream_id, stream_revision, event_id, event_type, data, metadata)
         SELECT transaction_id, 'tokens.forged', 0, '${forged}', 'TokenCreated', '{}', metadata
         FROM es_events WHERE event_id = '${before.event_id}'`,
      ],
      [`DELETE FROM es_events WHERE event_id = '${forged}'`],
    );
    expect(result.problem).toMatchObject({ kind: 'inserted', event: { event_id: forged } });
    expect(result.problem!.event!.global_position).toMatch(/^\d+$/);
  });

  it('two events swapped: names the first of them', async () => {
    const all = await events();
    // Two events of one append (one transaction): swapping their positions swaps their order.
    const first = all[150]!;
    const second = all.slice(151).find((event) => event.position.commit === first.position.commit)!;
    expect(second).toBeDefined();
    const swap = [
      `UPDATE es_events SET global_position = -global_position WHERE event_id = '${first.event_id}'`,
      `UPDATE es_events SET global_position = ${first.position.prepare} WHERE event_id = '${second.event_id}'`,
      `UPDATE es_events SET global_position = ${second.position.prepare} WHERE event_id = '${first.event_id}'`,
    ];
    const result = await tampered(swap, [
      `UPDATE es_events SET global_position = -global_position WHERE event_id = '${first.event_id}'`,
      `UPDATE es_events SET global_position = ${second.position.prepare} WHERE event_id = '${second.event_id}'`,
      `UPDATE es_events SET global_position = ${first.position.prepare} WHERE event_id = '${first.event_id}'`,
    ]);
    expect(result.problem).toMatchObject({
      kind: 'reordered',
      event: { event_id: first.event_id, global_position: first.position.prepare },
      seal: { number: await sealOf(first.event_id) },
    });
    expect(result.problem!.message).toContain(second.event_id);
  });

  it('a seal changed, or signed by another key: names the seal', async () => {
    const [third] = await readSeals(pool, 3, 1);
    const result = await tampered(
      [`UPDATE log_seals SET merkle_root = '${'0'.repeat(64)}' WHERE number = 3`],
      [`UPDATE log_seals SET merkle_root = '${third!.merkle_root}' WHERE number = 3`],
    );
    expect(result.problem).toMatchObject({ kind: 'seal', seal: { number: 3 } });
    const otherKey = new SealSigner(Buffer.alloc(32, 4).toString('base64')).publicKey;
    expect((await verify({ publicKey: otherKey })).problem).toMatchObject({
      kind: 'seal',
      seal: { number: 1 },
    });
  });

  it('from a trusted seal: checks only what follows it; a wrong hash fails', async () => {
    const [second] = await readSeals(pool, 2, 1);
    const [first] = await readSeals(pool, 1, 1);
    const fromSecond = await verify({ from: { number: 2, seal_hash: second!.seal_hash } });
    expect(fromSecond).toMatchObject({ ok: true, events: total - first!.event_count - second!.event_count });
    const wrong = await verify({ from: { number: 2, seal_hash: first!.seal_hash } });
    expect(wrong.problem).toMatchObject({ kind: 'seal', seal: { number: 2 } });
  });
});

describe('the sealing processor killed (SIGKILL) mid-batch', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  let child: ChildProcess | undefined;
  const crashStreams = 300;
  const crashTotal = crashStreams * eventsPerStream;

  beforeAll(async () => {
    database = await createTestDatabase(migrations);
    pool = createPool({ connectionString: database.url, max: 8 });
    store = new PostgresEventStore(pool);
    await appendStreams(store, crashStreams);
  });

  afterAll(async () => {
    child?.kill('SIGKILL');
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  it('restarted, continues the chain with no gap and no double seal', async () => {
    child = fork(new URL('./testing/sealer-process.ts', import.meta.url).pathname, [], {
      execArgv: [],
      env: { ...process.env, DATABASE_URL: database.url, SEALER_BATCH_SIZE: '10', SEALER_PAUSE_MS: '30' },
      stdio: 'inherit',
    });
    await waitUntil(async () => (await sealedCount(pool)) >= 200, 'the child sealer to make progress');
    // Mid-batch: its transaction is open (a seal written, the checkpoint not yet moved).
    await waitUntil(
      async () =>
        (
          await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
             AND application_name = 'log-sealer-crash-test' AND state = 'idle in transaction'`,
          )
        ).rowCount === 1,
      'a batch in progress',
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    const atCrash = await sealedCount(pool);
    expect(atCrash).toBeGreaterThanOrEqual(200);
    expect(atCrash).toBeLessThan(crashTotal);

    const sealer = createLogSealer({
      store,
      pool,
      logger: createLogger('warn'),
      batchSize: 25,
      intervalMs: 0,
    });
    await sealer.start();
    try {
      await waitUntil(
        async () => (await sealedCount(pool)) === crashTotal,
        'the restarted sealer to catch up',
      );
    } finally {
      await sealer.stop();
    }
    const seals = await readSeals(pool, 1, 100_000);
    expect(seals.map((seal) => seal.number)).toEqual(seals.map((_, i) => i + 1));
    expect(seals.reduce((sum, seal) => sum + seal.event_count, 0)).toBe(crashTotal);
    for (const [i, seal] of seals.entries()) {
      expect(seal.previous_hash).toBe(i === 0 ? '0'.repeat(64) : seals[i - 1]!.seal_hash);
    }
    const result = await verifyLog({ store, db: pool });
    expect(result).toMatchObject({ ok: true, events: crashTotal, seals: seals.length, unsealed: 0 });
  });
});
