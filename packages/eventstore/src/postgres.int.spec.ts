import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, NotificationHub } from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase, eventually } from '@tokenvault/platform/testing';
import {
  eventStoreContract,
  multiStreamAppendContract,
  uniquenessContract,
  type OpenAppend,
} from './contract.ts';
import { contractClaimScope, contractUniquenessRules, invited } from './testing/claims-fixture.ts';
import {
  appendToStream,
  eventStoreMigrations,
  independentRowsStatement,
  PostgresEventStore,
} from './index.ts';
import {
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type InlineProjection,
  type NewEvent,
  type RecordedEvent,
  type UniquenessRules,
} from './index.ts';

let database: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase(eventStoreMigrations);
  // The app role, not the owner: proves the migration grants what the store needs.
  pool = createPool({
    connectionString: database.url,
    max: 20,
    role: testAppRole,
    applicationName: 'es-test',
  });
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

// A fallback poll far slower than the waits of the specs (10 s): a delivery in time proves the
// NOTIFY wake-up.
const storeOptions = { pollIntervalMs: 60_000, fenceRetryMaxDelayMs: 50 };

// The service's group commit (APPEND_GROUP_COMMIT_MS, APPEND_GROUP_COMMIT_MAX defaults).
const groupCommit = { windowMs: 1, maxAppends: 100 };

eventStoreContract('postgres', {
  async createStore() {
    return new PostgresEventStore(pool, storeOptions);
  },
  async cleanup() {},
  appendInOpenTransaction,
});

eventStoreContract('postgres with group commit', {
  async createStore() {
    return new PostgresEventStore(pool, { ...storeOptions, groupCommit });
  },
  async cleanup() {},
  appendInOpenTransaction,
});

async function appendInOpenTransaction(stream: string, events: NewEvent[]): Promise<OpenAppend> {
  const client = await pool.connect();
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
}

// One transaction holds the claim and the append: no crash case (a kill rolls back both).
uniquenessContract('postgres', {
  async createStore() {
    return new PostgresEventStore(pool, { ...storeOptions, uniqueness: contractUniquenessRules });
  },
  async cleanup() {},
});

uniquenessContract('postgres with group commit', {
  async createStore() {
    return new PostgresEventStore(pool, {
      ...storeOptions,
      uniqueness: contractUniquenessRules,
      groupCommit,
    });
  },
  async cleanup() {},
});

describe('PostgresEventStore', () => {
  it('reconnects its LISTEN connection when it drops', async () => {
    const listenName = `es-listen-${Date.now()}`;
    const notifications = new NotificationHub({
      createClient: () => new pg.Client({ connectionString: database.url, application_name: listenName }),
    });
    const store = new PostgresEventStore(pool, { ...storeOptions, notifications });
    const received: RecordedEvent[] = [];
    const subscription = store.subscribeAll({
      streamPrefixes: ['reconnect/'],
      onEvents: async (batch) => void received.push(...batch),
    });
    const listening = async () =>
      (
        await pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
          [listenName],
        )
      ).rows[0]!.n;
    await eventually(async () => expect(await listening()).toBe(1));

    // The owner connection: the app role may not terminate another role's backend.
    const owner = new pg.Client({ connectionString: database.url });
    await owner.connect();
    try {
      await owner.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [listenName],
      );
    } finally {
      await owner.end();
    }
    await eventually(async () => expect(await listening()).toBe(0));
    await eventually(async () => expect(await listening()).toBe(1));

    // Appended by another store (another process, say): only the NOTIFY can wake this one within
    // eventually's 10 s (its fallback poll is a minute).
    const writer = new PostgresEventStore(pool, storeOptions);
    await writer.append('reconnect/1', [{ type: 'E', data: {}, metadata: { tenant_id: 't' } }], {
      expectedRevision: 'no_stream',
    });
    await writer.close();
    await eventually(async () => expect(received).toHaveLength(1));
    await subscription.stop();
    await store.close();
    await notifications.close();
    expect(await listening()).toBe(0);
  });

  it('closes without ending the pool', async () => {
    const store = new PostgresEventStore(pool, storeOptions);
    store.subscribeAll({ onEvents: async () => {} });
    await store.close();
    expect(() => store.subscribeAll({ onEvents: async () => {} })).toThrow(/closed/);
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

describe('PostgresEventStore with inline projections', () => {
  const counting: InlineProjection = {
    handles: ['Counted', 'Refused'],
    async apply(events, tx) {
      for (const event of events) {
        if (event.type === 'Refused') throw new Error('refused by the projection');
        await tx.query(
          `INSERT INTO inline_counts (stream, events, last_position) VALUES ($1, 1, $2)
           ON CONFLICT (stream) DO UPDATE SET events = inline_counts.events + 1, last_position = $2`,
          [event.stream, event.position.prepare],
        );
      }
    },
  };
  const countOf = async (stream: string) =>
    (await pool.query<{ events: number }>('SELECT events FROM inline_counts WHERE stream = $1', [stream]))
      .rows[0]?.events;

  beforeAll(async () => {
    const owner = new pg.Client({ connectionString: database.url });
    await owner.connect();
    try {
      await owner.query(
        `CREATE TABLE inline_counts (stream text PRIMARY KEY, events int NOT NULL, last_position bigint NOT NULL);
         GRANT SELECT, INSERT, UPDATE ON inline_counts TO ${testAppRole}`,
      );
    } finally {
      await owner.end();
    }
  });

  it('writes them in the append’s transaction: current at commit, and nothing stored when one fails', async () => {
    const committed: RecordedEvent[][] = [];
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      inlineProjections: [counting],
      onCommitted: (events) => void committed.push([...events]),
    });
    const metadata = { tenant_id: 't' };
    const appended = await store.append(
      'inline/1',
      [
        { type: 'Counted', data: {}, metadata },
        { type: 'Other', data: {}, metadata },
        { type: 'Counted', data: {}, metadata },
      ],
      { expectedRevision: 'no_stream' },
    );
    // No waiting: the read model has both handled events the moment append returns.
    expect(await countOf('inline/1')).toBe(2);
    expect(committed).toHaveLength(1);
    expect(committed[0]!.map((event) => [event.type, event.revision])).toEqual([
      ['Counted', 0],
      ['Other', 1],
      ['Counted', 2],
    ]);
    expect(committed[0]!.at(-1)!.position).toEqual(appended.position);
    expect(committed[0]![0]!.created_at).toBeInstanceOf(Date);

    await expect(
      store.append(
        'inline/1',
        [
          { type: 'Counted', data: {}, metadata },
          { type: 'Refused', data: {}, metadata },
        ],
        { expectedRevision: 2 },
      ),
    ).rejects.toThrow('refused by the projection');
    expect(await countOf('inline/1')).toBe(2);
    expect(await store.readStream('inline/1')).toHaveLength(3);
    expect(committed).toHaveLength(1);
    await store.close();
  });

  it('keeps concurrent appends of one stream in order, each projected once', async () => {
    const store = new PostgresEventStore(pool, { ...storeOptions, inlineProjections: [counting] });
    await Promise.all(
      Array.from({ length: 20 }, () =>
        store.append('inline/concurrent', [{ type: 'Counted', data: {}, metadata: { tenant_id: 't' } }], {
          expectedRevision: 'any',
        }),
      ),
    );
    expect(await countOf('inline/concurrent')).toBe(20);
    const last = (await store.readStream('inline/concurrent')).at(-1)!;
    const row = await pool.query<{ p: string }>(
      'SELECT last_position::text AS p FROM inline_counts WHERE stream = $1',
      ['inline/concurrent'],
    );
    expect(row.rows[0]?.p).toBe(last.position.prepare);
    await store.close();
  });
});

describe('PostgresEventStore uniqueness claims', () => {
  // Each Invited event claims its address; Withdrawn releases what its invitation holds.
  const rules: UniquenessRules = (event) => {
    const data = event.data as { invitation: string; email?: string; tenant?: string };
    if (event.type === 'Invited')
      return {
        claim: [{ scope: 'test-email', key: data.email!, holder: data.invitation, tenant_id: data.tenant! }],
      };
    if (event.type === 'Withdrawn')
      return { releaseHeldBy: [{ scope: 'test-email', holder: data.invitation }] };
    if (event.type === 'TenantGone') return { releaseTenant: data.tenant! };
    return undefined;
  };
  const tenant = '00000000-0000-4000-8000-0000000000aa';
  const invite = (store: PostgresEventStore, invitation: string, email: string) =>
    store.append(
      `claims/${invitation}`,
      [{ type: 'Invited', data: { invitation, email, tenant }, metadata: { tenant_id: tenant } }],
      { expectedRevision: 'no_stream' },
    );

  it('lets one holder claim a key: a second claim fails its whole append, naming the holder', async () => {
    const store = new PostgresEventStore(pool, { ...storeOptions, uniqueness: rules });
    await invite(store, 'a', 'one@example.com');
    const refused = await invite(store, 'b', 'one@example.com').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UniqueClaimTaken);
    expect(refused).toMatchObject({ scope: 'test-email', holder: 'a' });
    expect(JSON.stringify(refused)).not.toContain('one@example.com');
    expect(await store.claimHolder('test-email', 'one@example.com')).toBe('a');
    expect(await store.readStream('claims/b')).toEqual([]);

    // Released by its holder, the key can be claimed again.
    await store.append(
      'claims/a',
      [{ type: 'Withdrawn', data: { invitation: 'a' }, metadata: { tenant_id: tenant } }],
      { expectedRevision: 0 },
    );
    await invite(store, 'b', 'one@example.com');
    await store.close();
  });

  it('gives a key to exactly one of many concurrent claims, and frees a deleted tenant’s', async () => {
    const store = new PostgresEventStore(pool, { ...storeOptions, uniqueness: rules });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, index) => invite(store, `race-${index}`, 'race@example.com')),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(UniqueClaimTaken);
    }
    await store.append(
      'claims/tenant',
      [{ type: 'TenantGone', data: { tenant }, metadata: { tenant_id: tenant } }],
      {
        expectedRevision: 'no_stream',
      },
    );
    await invite(store, 'after-tenant', 'race@example.com');
    await store.close();
  });
});

multiStreamAppendContract('postgres', {
  async createStore() {
    return new PostgresEventStore(pool, { ...storeOptions, uniqueness: contractUniquenessRules });
  },
  async cleanup() {},
});

describe('PostgresEventStore with group commit', () => {
  const metadata = { tenant_id: 't' };
  const one = (type = 'E', data: unknown = {}): NewEvent[] => [{ type, data, metadata }];
  // Rows of a table with a key of its own: a second row with the same key fails its append.
  const keyed: InlineProjection = {
    handles: ['Keyed'],
    async apply(events, tx) {
      for (const event of events)
        await tx.query('INSERT INTO group_keys (key, stream) VALUES ($1, $2)', [
          (event.data as { key: string }).key,
          event.stream,
        ]);
    },
  };
  // Reads the stored revision: its append cannot run ahead and goes step by step, alone.
  const revisionReader: InlineProjection = {
    handles: ['NeedsRevision'],
    async apply(events, tx) {
      for (const event of events)
        await tx.query('INSERT INTO group_keys (key, stream) VALUES ($1, $2)', [
          `${event.stream}@${event.revision}`,
          event.stream,
        ]);
    },
  };

  beforeAll(async () => {
    const owner = new pg.Client({ connectionString: database.url });
    await owner.connect();
    try {
      await owner.query(
        `CREATE TABLE group_keys (key text PRIMARY KEY, stream text NOT NULL);
         GRANT SELECT, INSERT ON group_keys TO ${testAppRole}`,
      );
    } finally {
      await owner.end();
    }
  });

  it('commits appends made at once in fewer transactions than appends, each readable once it returns', async () => {
    const store = new PostgresEventStore(pool, { ...storeOptions, groupCommit });
    const prefix = `grouped-${Date.now()}/`;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        store.append(`${prefix}${index}`, one(), { expectedRevision: 'no_stream' }),
      ),
    );
    // The commit half of a position is the writing transaction's id: one per transaction.
    const transactions = await pool.query<{ n: number }>(
      'SELECT count(DISTINCT transaction_id)::int AS n FROM es_events WHERE starts_with(stream_id, $1)',
      [prefix],
    );
    expect(transactions.rows[0]!.n).toBe(new Set(results.map((result) => result.position.commit)).size);
    expect(transactions.rows[0]!.n).toBeLessThan(results.length / 4);
    await store.close();
  });

  /** The names of the named statements the pool's clients send while `during` runs. */
  let recorded: string[] | undefined;
  const wrapped = new WeakSet<object>();
  const recordNames = (client: pg.PoolClient) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((config: unknown, ...rest: unknown[]) => {
      const name = (config as { name?: unknown } | null)?.name;
      if (typeof name === 'string') recorded?.push(name);
      return query(config, ...rest);
    }) as typeof client.query;
  };
  async function statementNames(during: () => Promise<unknown>): Promise<string[]> {
    pool.on('acquire', recordNames);
    recorded = [];
    try {
      await during();
      return recorded;
    } finally {
      recorded = undefined;
      pool.off('acquire', recordNames);
    }
  }
  const perAppend = (names: string[]) =>
    names.filter(
      (name) =>
        /^es_append_(any|no_stream|stream_exists|revision)/.test(name) || name === 'es_claim_refusing',
    );

  it('sends a batch without conflicts as one multi-row append statement and one claim statement', async () => {
    // Given a store that claims an address per invitation
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      groupCommit,
      uniqueness: contractUniquenessRules,
    });
    const prefix = `multi-row-${Date.now()}/`;
    // When twenty invitations of distinct addresses are appended at once
    const names = await statementNames(() =>
      Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          store.append(`${prefix}${index}`, [invited(`${prefix}${index}`, `${prefix}${index}@example.com`)], {
            expectedRevision: 'no_stream',
          }),
        ),
      ),
    );
    // Then one statement stored the twenty appends and one took the twenty claims
    expect(names.filter((name) => name === 'es_append_batch_refusing')).toHaveLength(1);
    expect(names.filter((name) => name === 'es_claim_batch_refusing')).toHaveLength(1);
    expect(perAppend(names)).toEqual([]);
    for (let index = 0; index < 20; index++)
      expect(await store.claimHolder(contractClaimScope, `${prefix}${index}@example.com`)).toBe(
        `${prefix}${index}`,
      );
    await store.close();
  });

  it('sends two appends to one stream in one batch as two multi-row statements, the second after the first', async () => {
    const store = new PostgresEventStore(pool, { ...storeOptions, groupCommit });
    const prefix = `layers-${Date.now()}/`;
    let results: { revision: number }[] = [];
    const names = await statementNames(async () => {
      results = await Promise.all([
        store.append(`${prefix}a`, one('Created'), { expectedRevision: 'no_stream' }),
        store.append(`${prefix}b`, one('Created'), { expectedRevision: 'any' }),
        store.append(`${prefix}a`, one('Next'), { expectedRevision: 0 }),
        store.append(`${prefix}a`, one('Last'), { expectedRevision: 'stream_exists' }),
      ]);
    });
    expect(results.map((result) => result.revision)).toEqual([0, 0, 1, 2]);
    expect(names.filter((name) => name === 'es_append_batch_refusing')).toHaveLength(3);
    expect(perAppend(names)).toEqual([]);
    expect((await store.readStream(`${prefix}a`)).map((event) => event.type)).toEqual([
      'Created',
      'Next',
      'Last',
    ]);
    await store.close();
  });

  it('sends a batch whose multi-row statement refuses again append by append: only the conflicting one fails', async () => {
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      groupCommit,
      uniqueness: contractUniquenessRules,
    });
    const prefix = `refused-${Date.now()}/`;
    await store.append(`${prefix}holder`, [invited(`${prefix}holder`, `${prefix}taken@example.com`)], {
      expectedRevision: 'no_stream',
    });
    let outcomes: PromiseSettledResult<unknown>[] = [];
    const names = await statementNames(async () => {
      outcomes = await Promise.allSettled([
        ...Array.from({ length: 5 }, (_, index) =>
          store.append(`${prefix}${index}`, [invited(`${prefix}${index}`, `${prefix}${index}@example.com`)], {
            expectedRevision: 'no_stream',
          }),
        ),
        store.append(`${prefix}late`, [invited(`${prefix}late`, `${prefix}taken@example.com`)], {
          expectedRevision: 'no_stream',
        }),
      ]);
    });
    expect(outcomes.map((outcome) => outcome.status)).toEqual([...Array(5).fill('fulfilled'), 'rejected']);
    expect((outcomes[5] as PromiseRejectedResult).reason).toMatchObject({ holder: `${prefix}holder` });
    expect(names.filter((name) => name === 'es_claim_batch_refusing')).toHaveLength(1);
    expect(perAppend(names).length).toBeGreaterThan(0);
    expect(await store.readStream(`${prefix}late`)).toEqual([]);
    for (let index = 0; index < 5; index++)
      expect(await store.readStream(`${prefix}${index}`)).toHaveLength(1);
    await store.close();
  });

  // The same rows as `keyed`, declared independent of the batch's other statements: mergeable.
  const independentKeyed: InlineProjection = {
    handles: ['IndependentKeyed'],
    async apply(events, tx) {
      await tx.query(
        independentRowsStatement(
          'group_keys_inserted',
          `INSERT INTO group_keys (key, stream)
           SELECT r.key, r.stream FROM jsonb_to_recordset($1::jsonb) AS r(key text, stream text)`,
          events.map((event) => ({ key: (event.data as { key: string }).key, stream: event.stream })),
        ),
      );
    },
  };

  it('sends the inline rows a projection declares independent once for the batch, and not when another statement is beside them', async () => {
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      groupCommit,
      inlineProjections: [independentKeyed, keyed],
    });
    const prefix = `independent-${Date.now()}/`;
    const appendAll = (round: string, count: number) =>
      Promise.all(
        Array.from({ length: count }, (_, index) =>
          store.append(
            `${prefix}${round}-${index}`,
            one('IndependentKeyed', { key: `${prefix}${round}-${index}` }),
            {
              expectedRevision: 'no_stream',
            },
          ),
        ),
      );
    // Twenty appends whose only inline statement is declared: one statement for their rows
    const merged = await statementNames(() => appendAll('alone', 20));
    expect(merged.filter((name) => name === 'group_keys_inserted')).toHaveLength(1);
    // With an undeclared statement of another append in the batch, each append sends its own
    const beside = await statementNames(() =>
      Promise.all([
        appendAll('beside', 5),
        store.append(`${prefix}plain`, one('Keyed', { key: `${prefix}plain` }), {
          expectedRevision: 'no_stream',
        }),
      ]),
    );
    expect(beside.filter((name) => name === 'group_keys_inserted')).toHaveLength(5);
    const { rows } = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM group_keys WHERE starts_with(key, $1)',
      [prefix],
    );
    expect(rows[0]!.n).toBe(20 + 5 + 1);
    await store.close();
  });

  it('fails only the append whose row in a merged statement breaks a constraint', async () => {
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      groupCommit,
      inlineProjections: [independentKeyed],
    });
    const prefix = `independent-conflict-${Date.now()}/`;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, index) =>
        store.append(
          `${prefix}${index}`,
          one('IndependentKeyed', { key: `${prefix}k${Math.min(index, 6)}` }),
          {
            expectedRevision: 'no_stream',
          },
        ),
      ),
    );
    // Keys of 6 and 7 are the same: the later fails with the key's unique violation.
    expect(outcomes.map((outcome) => outcome.status)).toEqual([...Array(7).fill('fulfilled'), 'rejected']);
    expect((outcomes[7] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    expect(await store.readStream(`${prefix}7`)).toEqual([]);
    for (let index = 0; index < 7; index++)
      expect(await store.readStream(`${prefix}${index}`)).toHaveLength(1);
    await store.close();
  });

  it('runs two appends to one stream in one batch as if one after the other', async () => {
    const store = new PostgresEventStore(pool, { ...storeOptions, groupCommit });
    const stream = `sequential-${Date.now()}`;
    const [created, next, stale] = await Promise.allSettled([
      store.append(stream, one('Created'), { expectedRevision: 'no_stream' }),
      store.append(stream, one('Next'), { expectedRevision: 0 }),
      store.append(stream, one('Stale'), { expectedRevision: 0 }),
    ]);
    expect(created).toMatchObject({ status: 'fulfilled', value: { revision: 0 } });
    expect(next).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
    // The third saw the second's revision: it fails as it would have after it.
    expect(stale).toMatchObject({ status: 'rejected', reason: expect.any(WrongExpectedRevisionError) });
    expect((created as PromiseFulfilledResult<{ position: { commit: string } }>).value.position.commit).toBe(
      (next as PromiseFulfilledResult<{ position: { commit: string } }>).value.position.commit,
    );
    expect((await store.readStream(stream)).map((event) => event.type)).toEqual(['Created', 'Next']);
    await store.close();
  });

  it('fails only the append whose projection statement fails, with that statement’s error', async () => {
    const store = new PostgresEventStore(pool, {
      ...storeOptions,
      groupCommit,
      inlineProjections: [keyed, revisionReader],
    });
    const prefix = `keyed-${Date.now()}/`;
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 10 }, (_, index) =>
        store.append(`${prefix}${index}`, one('Keyed', { key: `${prefix}k${index % 8}` }), {
          expectedRevision: 'no_stream',
        }),
      ),
      store.append(`${prefix}step-by-step`, one('NeedsRevision'), { expectedRevision: 'no_stream' }),
    ]);
    // Keys 0 and 1 come twice: the second of each fails with the key's unique violation.
    const failed = outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [index] : []));
    expect(failed).toEqual([8, 9]);
    for (const index of failed)
      expect((outcomes[index] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    for (const index of [...Array.from({ length: 8 }, (_, n) => n)])
      expect(await store.readStream(`${prefix}${index}`)).toHaveLength(1);
    for (const index of failed) expect(await store.readStream(`${prefix}${index}`)).toEqual([]);
    const stepByStep = await pool.query('SELECT 1 FROM group_keys WHERE key = $1', [
      `${prefix}step-by-step@0`,
    ]);
    expect(stepByStep.rowCount).toBe(1);
    await store.close();
  });
});
