import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreMigrations, PostgresEventStore, type NewEvent } from '@tokenvault/eventstore';
import { projectorMigrations } from '@tokenvault/cqrs';
import { verifiableLogMigrations } from './migrations.ts';
import { createTreeHeadSigner } from './tree-head-signer.ts';
import { LogSigningKey } from './tree-head.ts';
import { verifyLog, type LogVerification } from './verify.ts';
import { readTreeHeads } from './postgres/read-tree-heads.ts';

const migrations = [...eventStoreMigrations, ...projectorMigrations, ...verifiableLogMigrations];
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

const coveredCount = async (pool: Pool) =>
  (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM log_tree_leaves')).rows[0]!.n;

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
  const signingKey = new LogSigningKey(Buffer.alloc(32, 3).toString('base64'));

  beforeAll(async () => {
    database = await createTestDatabase(migrations);
    pool = createPool({ connectionString: database.url, max: 6 });
    store = new PostgresEventStore(pool);
    await appendStreams(store, streams);
    const signer = createTreeHeadSigner({
      store,
      pool,
      logger: createLogger('warn'),
      batchSize: 40,
      intervalMs: 0,
      signingKey,
    });
    await signer.start();
    try {
      await waitUntil(async () => (await coveredCount(pool)) === total, 'every event to be covered');
    } finally {
      await signer.stop();
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
  const treeHeadOf = async (eventId: string) =>
    (
      await pool.query<{ tree_head_number: number }>(
        'SELECT tree_head_number::int FROM log_tree_leaves WHERE event_id = $1',
        [eventId],
      )
    ).rows[0]!.tree_head_number;

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

  it('an untouched log verifies: every tree head, every event, signatures included', async () => {
    const result = await verify({ publicKey: signingKey.publicKey });
    expect(result).toMatchObject({ ok: true, events: total, uncovered: 0 });
    expect(result.treeHeads).toBeGreaterThanOrEqual(Math.ceil(total / 40));
    const heads = await readTreeHeads(pool, 1, 10_000);
    expect(heads.map((head) => head.number)).toEqual(heads.map((_, i) => i + 1));
    expect(result.lastGoodTreeHead).toEqual({
      number: heads.at(-1)!.number,
      tree_head_hash: heads.at(-1)!.tree_head_hash,
    });
  });

  it('one event’s data changed: names it (id, global position) and its tree head', async () => {
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
      treeHead: { number: await treeHeadOf(target.event_id) },
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
      treeHead: { number: await treeHeadOf(target.event_id) },
    });
  });

  it('a forged event inserted among covered ones: names it', async () => {
    const before = (await events())[57]!;
    const forged = randomUUID();
    // In the transaction of a covered event: the port reads it between covered events.
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
      treeHead: { number: await treeHeadOf(first.event_id) },
    });
    expect(result.problem!.message).toContain(second.event_id);
  });

  it('a tree head changed, or signed by another key: names the tree head', async () => {
    const [third] = await readTreeHeads(pool, 3, 1);
    const result = await tampered(
      [`UPDATE log_tree_heads SET merkle_root = '${'0'.repeat(64)}' WHERE number = 3`],
      [`UPDATE log_tree_heads SET merkle_root = '${third!.merkle_root}' WHERE number = 3`],
    );
    expect(result.problem).toMatchObject({ kind: 'tree-head', treeHead: { number: 3 } });
    const otherKey = new LogSigningKey(Buffer.alloc(32, 4).toString('base64')).publicKey;
    expect((await verify({ publicKey: otherKey })).problem).toMatchObject({
      kind: 'tree-head',
      treeHead: { number: 1 },
    });
  });

  it('from a trusted tree head: checks only what follows it; a wrong hash fails', async () => {
    const [second] = await readTreeHeads(pool, 2, 1);
    const [first] = await readTreeHeads(pool, 1, 1);
    const fromSecond = await verify({ from: { number: 2, tree_head_hash: second!.tree_head_hash } });
    expect(fromSecond).toMatchObject({ ok: true, events: total - first!.event_count - second!.event_count });
    const wrong = await verify({ from: { number: 2, tree_head_hash: first!.tree_head_hash } });
    expect(wrong.problem).toMatchObject({ kind: 'tree-head', treeHead: { number: 2 } });
  });
});

describe('the tree-head signer killed (SIGKILL) mid-batch', () => {
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

  it('restarted, continues the chain with no gap and no event covered twice', async () => {
    child = fork(new URL('./testing/tree-head-signer-process.ts', import.meta.url).pathname, [], {
      execArgv: [],
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        TREE_HEAD_SIGNER_BATCH_SIZE: '10',
        TREE_HEAD_SIGNER_PAUSE_MS: '30',
      },
      stdio: 'inherit',
    });
    await waitUntil(async () => (await coveredCount(pool)) >= 200, 'the child signer to make progress');
    // Mid-batch: its transaction is open (a tree head written, the checkpoint not yet moved).
    await waitUntil(
      async () =>
        (
          await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
             AND application_name = 'tree-head-signer-crash-test' AND state = 'idle in transaction'`,
          )
        ).rowCount === 1,
      'a batch in progress',
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    const atCrash = await coveredCount(pool);
    expect(atCrash).toBeGreaterThanOrEqual(200);
    expect(atCrash).toBeLessThan(crashTotal);

    const signer = createTreeHeadSigner({
      store,
      pool,
      logger: createLogger('warn'),
      batchSize: 25,
      intervalMs: 0,
    });
    await signer.start();
    try {
      await waitUntil(
        async () => (await coveredCount(pool)) === crashTotal,
        'the restarted signer to catch up',
      );
    } finally {
      await signer.stop();
    }
    const heads = await readTreeHeads(pool, 1, 100_000);
    expect(heads.map((head) => head.number)).toEqual(heads.map((_, i) => i + 1));
    expect(heads.reduce((sum, head) => sum + head.event_count, 0)).toBe(crashTotal);
    for (const [i, head] of heads.entries()) {
      expect(head.previous_hash).toBe(i === 0 ? '0'.repeat(64) : heads[i - 1]!.tree_head_hash);
    }
    const result = await verifyLog({ store, db: pool });
    expect(result).toMatchObject({ ok: true, events: crashTotal, treeHeads: heads.length, uncovered: 0 });
  });
});
