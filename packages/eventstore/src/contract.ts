import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  comparePositions,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type Subscription,
} from './port.ts';
import { contractClaimScope, invited, withdrawn } from './testing/claims-fixture.ts';

/** An append whose transaction is still open: it holds its position but is not visible yet. */
export interface OpenAppend {
  result: AppendResult;
  commit(): Promise<void>;
}

export interface ContractHarness {
  /**
   * Called once for the suite. The store's fallback polling (if it polls) must be several times
   * slower than the suite's wait limit (10 s), so that the wake-up test proves notifications
   * rather than polling without timing anything shorter than that limit.
   */
  createStore(): Promise<EventStore>;
  /** Called after the store was closed. */
  cleanup(): Promise<void>;
  /** Adapters where a transaction can take its position before it commits; enables the late-commit tests. */
  appendInOpenTransaction?(stream: string, events: NewEvent[]): Promise<OpenAppend>;
}

const tenantId = '6f1c1b5e-2f4a-4d8e-9d3b-0c2a7e5b9f10';
const waitLimitMs = 10_000;

function event(type: string, data: unknown = { type }, extra: Partial<NewEvent> = {}): NewEvent {
  return { type, data, metadata: { tenant_id: tenantId, actor_type: 'system' }, ...extra };
}

/**
 * `count` committed events under a prefix, read from the whole log. A store may hold back events
 * that committed after a transaction still open elsewhere on its server (the PostgreSQL adapter's
 * snapshot fence does, and test files run side by side), so wait until they are all visible.
 */
async function readAllVisible(store: EventStore, prefix: string, count: number): Promise<RecordedEvent[]> {
  const deadline = Date.now() + waitLimitMs;
  for (;;) {
    const events = await store.readAll({ limit: Math.max(count, 100), streamPrefixes: [prefix] });
    if (events.length >= count || Date.now() > deadline) return events;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A stream-name prefix of its own per test: every test reads only what it wrote. */
function uniquePrefix(): string {
  return `t${randomUUID().slice(0, 8)}/`;
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

function withTimeout<T>(promise: Promise<T>, what: string, ms = waitLimitMs): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    // The promise's own rejection is passed on as it is.
    promise.finally(() => clearTimeout(timer)).then(resolve, reject);
  });
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Collects what a subscription delivers; until(n) resolves once n events arrived. */
function collector() {
  const events: RecordedEvent[] = [];
  const batchSizes: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const waiters: { count: number; resolve(): void }[] = [];
  return {
    events,
    batchSizes,
    get maxInFlight() {
      return maxInFlight;
    },
    async onEvents(batch: RecordedEvent[]): Promise<void> {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await Promise.resolve(); // overlapping calls would show up here
      events.push(...batch);
      batchSizes.push(batch.length);
      inFlight--;
      for (const waiter of waiters.filter((w) => events.length >= w.count)) waiter.resolve();
    },
    until(count: number): Promise<void> {
      if (events.length >= count) return Promise.resolve();
      const done = deferred();
      waiters.push({ count, resolve: done.resolve });
      return withTimeout(done.promise, `${count} events (got ${events.length})`);
    },
  };
}

function expectStrictlyIncreasing(events: RecordedEvent[]): void {
  for (let index = 1; index < events.length; index++) {
    expect(comparePositions(events[index - 1]!.position, events[index]!.position)).toBe(-1);
  }
}

function expectRecorded(
  recorded: RecordedEvent[],
  written: NewEvent[],
  stream: string,
  firstRevision = 0,
): void {
  expect(recorded).toHaveLength(written.length);
  recorded.forEach((actual, index) => {
    const expected = written[index]!;
    expect(actual.stream).toBe(stream);
    expect(actual.revision).toBe(firstRevision + index);
    expect(actual.type).toBe(expected.type);
    expect(actual.data).toEqual(expected.data);
    expect(actual.metadata).toEqual(expected.metadata);
    if (expected.event_id) expect(actual.event_id).toBe(expected.event_id);
    else expect(actual.event_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(actual.created_at).toBeInstanceOf(Date);
  });
  expectStrictlyIncreasing(recorded);
}

async function expectWrongRevision(promise: Promise<unknown>, stream: string, expected: ExpectedRevision) {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(WrongExpectedRevisionError);
  expect(error).toMatchObject({ stream, expected });
}

/** The behaviour every EventStore adapter must have. */
export function eventStoreContract(name: string, harness: ContractHarness): void {
  // Cases of transactions committing out of order exist only for a store that has transactions
  // to hold open: another store has no such case (registered, not skipped).
  const itWithOpenTransactions = harness.appendInOpenTransaction ? it : () => undefined;
  describe(`event store contract: ${name}`, () => {
    let store: EventStore;
    const running: Subscription[] = [];
    const subscribe = (...args: Parameters<EventStore['subscribeAll']>) => {
      const subscription = store.subscribeAll(...args);
      running.push(subscription);
      return subscription;
    };

    beforeAll(async () => {
      store = await harness.createStore();
    });

    afterAll(async () => {
      await Promise.all(running.map((subscription) => subscription.stop()));
      await store?.close();
      await harness.cleanup();
    });

    it('reports the head position: the position of the last event committed', async () => {
      const stream = `head-${randomUUID()}`;
      const first = await store.append(stream, [event('A')], { expectedRevision: 'no_stream' });
      expect(comparePositions((await store.headPosition())!, first.position)).toBe(0);
      const second = await store.append(stream, [event('B')], { expectedRevision: 0 });
      expect(comparePositions((await store.headPosition())!, second.position)).toBe(0);
    });

    it('gives back what was written, in order, through readStream, readAll and subscribeAll', async () => {
      const prefix = uniquePrefix();
      const stream = `${prefix}order-1`;
      const first: NewEvent[] = [
        event(
          'OrderPlaced',
          {
            id: 1,
            lines: [{ sku: 'é-ß-✓', qty: 2, price: 10.5 }],
            note: '注文 🚀 naïve',
            gift: null,
            rush: false,
          },
          { event_id: randomUUID() },
        ),
        event('OrderPaid', {
          amount: { value: '12.30', currency: 'EUR' },
          nested: { deep: { deeper: [1, [2, [3]]] } },
        }),
        {
          type: 'OrderTagged',
          data: ['a', 'b'],
          metadata: {
            tenant_id: tenantId,
            actor_id: 'user-1',
            actor_type: 'user',
            correlation_id: randomUUID(),
            causation_id: randomUUID(),
          },
        },
      ];
      const second: NewEvent[] = [event('OrderShipped', 'a plain string'), event('OrderClosed', 42)];
      const other = event('Unrelated', { stream: 'other' });

      const firstResult = await store.append(stream, first, { expectedRevision: 'no_stream' });
      await store.append(`${prefix}other`, [other], { expectedRevision: 'no_stream' });
      const secondResult = await store.append(stream, second, { expectedRevision: 2 });

      const fromStream = await store.readStream(stream);
      expectRecorded(fromStream, [...first, ...second], stream);
      expect(firstResult).toEqual({ revision: 2, position: fromStream[2]!.position });
      expect(secondResult).toEqual({ revision: 4, position: fromStream[4]!.position });
      expect(await store.readStream(`${prefix}missing`)).toEqual([]);

      const fromAll = await readAllVisible(store, prefix, 6);
      expectStrictlyIncreasing(fromAll);
      expect(fromAll.map((e) => e.event_id)).toEqual([
        ...fromStream.slice(0, 3).map((e) => e.event_id),
        expect.any(String),
        ...fromStream.slice(3).map((e) => e.event_id),
      ]);
      expectRecorded([fromAll[3]!], [other], `${prefix}other`);
      expect(fromAll.filter((e) => e.stream === stream)).toEqual(fromStream);

      const paged = [
        ...(await store.readAll({ limit: 2, streamPrefixes: [prefix] })),
        ...(await store.readAll({ after: fromAll[1]!.position, limit: 2, streamPrefixes: [prefix] })),
        ...(await store.readAll({ after: fromAll[3]!.position, limit: 10, streamPrefixes: [prefix] })),
      ];
      expect(paged).toEqual(fromAll);

      const received = collector();
      const subscription = subscribe({
        streamPrefixes: [prefix],
        onEvents: (batch) => received.onEvents(batch),
      });
      await received.until(fromAll.length);
      await subscription.stop();
      expect(received.events).toEqual(fromAll);
    });

    it('checks the expected revision of each kind', async () => {
      const prefix = uniquePrefix();
      const stream = `${prefix}s`;
      const missing = `${prefix}missing`;

      await expectWrongRevision(
        store.append(missing, [event('E')], { expectedRevision: 'stream_exists' }),
        missing,
        'stream_exists',
      );
      await expectWrongRevision(store.append(missing, [event('E')], { expectedRevision: 0 }), missing, 0);
      expect(await store.readStream(missing)).toEqual([]);

      expect((await store.append(stream, [event('E0')], { expectedRevision: 'no_stream' })).revision).toBe(0);
      await expectWrongRevision(
        store.append(stream, [event('E')], { expectedRevision: 'no_stream' }),
        stream,
        'no_stream',
      );
      expect(
        (await store.append(stream, [event('E1')], { expectedRevision: 'stream_exists' })).revision,
      ).toBe(1);
      await expectWrongRevision(store.append(stream, [event('E')], { expectedRevision: 0 }), stream, 0); // stale
      await expectWrongRevision(store.append(stream, [event('E')], { expectedRevision: 5 }), stream, 5); // ahead
      expect((await store.append(stream, [event('E2'), event('E3')], { expectedRevision: 1 })).revision).toBe(
        3,
      );
      expect((await store.append(stream, [event('E4')], { expectedRevision: 'any' })).revision).toBe(4);
      expect(
        (await store.append(`${prefix}fresh`, [event('F0')], { expectedRevision: 'any' })).revision,
      ).toBe(0);

      // Failed appends left nothing behind.
      expect((await store.readStream(stream)).map((e) => e.type)).toEqual(['E0', 'E1', 'E2', 'E3', 'E4']);

      await expect(store.append('', [event('E')], { expectedRevision: 'any' })).rejects.toThrow();
      await expect(store.append(stream, [], { expectedRevision: 'any' })).rejects.toThrow();
      expect(await store.readStream(stream)).toHaveLength(5);
    });

    it('lets exactly one of 50 concurrent appends with the same expected revision win', async () => {
      const prefix = uniquePrefix();
      const stream = `${prefix}contended`;
      await store.append(stream, [event('Created')], { expectedRevision: 'no_stream' });

      const attempts = Array.from({ length: 50 }, (_, writer) => [
        event('Changed', { writer, part: 1 }, { event_id: randomUUID() }),
        event('Changed', { writer, part: 2 }, { event_id: randomUUID() }),
      ]);
      const outcomes = await Promise.allSettled(
        attempts.map((events) => store.append(stream, events, { expectedRevision: 0 })),
      );

      const winners = outcomes.flatMap((outcome, writer) => (outcome.status === 'fulfilled' ? [writer] : []));
      expect(winners).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(WrongExpectedRevisionError);
      }
      const events = await store.readStream(stream);
      expect(events.map((e) => e.revision)).toEqual([0, 1, 2]);
      expect(events.slice(1).map((e) => e.event_id)).toEqual(attempts[winners[0]!]!.map((e) => e.event_id));
    });

    it('lets exactly one of 50 concurrent no_stream appends create the stream', async () => {
      const stream = `${uniquePrefix()}created-once`;
      const outcomes = await Promise.allSettled(
        Array.from({ length: 50 }, (_, writer) =>
          store.append(stream, [event('Created', { writer })], { expectedRevision: 'no_stream' }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
      expect(
        outcomes.filter((o) => o.status === 'rejected' && o.reason instanceof WrongExpectedRevisionError),
      ).toHaveLength(49);
      expect(await store.readStream(stream)).toHaveLength(1);
    });

    it('keeps a stream in revision order in readAll under concurrent appends', async () => {
      const prefix = uniquePrefix();
      const stream = `${prefix}busy`;
      await Promise.all(
        Array.from({ length: 40 }, (_, writer) =>
          store.append(stream, [event('Tick', { writer }), event('Tock', { writer })], {
            expectedRevision: 'any',
          }),
        ),
      );
      const all = await readAllVisible(store, prefix, 80);
      expect(all.map((e) => e.revision)).toEqual(Array.from({ length: 80 }, (_, revision) => revision));
      expectStrictlyIncreasing(all);
    });

    it('stores appends made at once to many streams, of every kind of expectation, each at its revision, readable at once and ordered by position across streams', async () => {
      // Given streams at known revisions
      const prefix = uniquePrefix();
      const existing = Array.from({ length: 6 }, (_, index) => `${prefix}existing-${index}`);
      for (const stream of existing)
        await store.append(stream, [event('Created'), event('Named')], { expectedRevision: 'no_stream' });
      // When appends without a conflict among them are made in one go (one batch where a store
      // commits appends together), some streams twice (with `any`: their order is the store's)
      const plan: { stream: string; expected: ExpectedRevision; revision?: number }[] = [
        ...Array.from({ length: 12 }, (_, index) => ({
          stream: `${prefix}fresh-${index}`,
          expected: index % 2 === 0 ? ('no_stream' as const) : ('any' as const),
          revision: 1,
        })),
        { stream: existing[0]!, expected: 1, revision: 3 },
        { stream: existing[1]!, expected: 'stream_exists', revision: 3 },
        { stream: existing[2]!, expected: 'any', revision: 3 },
        { stream: existing[3]!, expected: 1, revision: 3 },
        { stream: existing[4]!, expected: 'any' },
        { stream: existing[4]!, expected: 'any' },
        { stream: `${prefix}twice`, expected: 'any' },
        { stream: `${prefix}twice`, expected: 'any' },
      ];
      const written = plan.map((_, index) => [
        event('First', { index }, { event_id: randomUUID() }),
        event('Second', { index }, { event_id: randomUUID() }),
      ]);
      const results = await Promise.all(
        plan.map((one, index) =>
          store.append(one.stream, written[index]!, { expectedRevision: one.expected }),
        ),
      );

      // Then each is answered with its own last revision, and reads back at once
      for (const [index, result] of results.entries()) {
        const { stream, revision } = plan[index]!;
        if (revision !== undefined) expect(result.revision).toBe(revision);
        const own = (await store.readStream(stream)).filter(
          (recorded) => recorded.revision >= result.revision - 1 && recorded.revision <= result.revision,
        );
        expect(own.map((recorded) => recorded.event_id)).toEqual(written[index]!.map((e) => e.event_id));
        expect(own.at(-1)).toMatchObject({ revision: result.revision, position: result.position });
      }
      // And the log holds every event once, by position across streams, each stream in order
      const all = await readAllVisible(store, prefix, existing.length * 2 + plan.length * 2);
      expect(all).toHaveLength(existing.length * 2 + plan.length * 2);
      expectStrictlyIncreasing(all);
      for (const stream of new Set(all.map((recorded) => recorded.stream))) {
        const revisions = all.filter((recorded) => recorded.stream === stream).map((e) => e.revision);
        expect(revisions).toEqual(Array.from({ length: revisions.length }, (_, revision) => revision));
      }
      // And an append's events are back to back in the log
      for (const [index, result] of results.entries()) {
        const last = all.findIndex((recorded) => comparePositions(recorded.position, result.position) === 0);
        expect(all[last - 1]!.event_id).toBe(written[index]![0]!.event_id);
      }
    });

    it('fails exactly the conflicting ones of appends made at once; the others are stored, readable at once and in order', async () => {
      // Made in one go, so that a store that commits appends together puts them in one batch.
      const prefix = uniquePrefix();
      const existing = `${prefix}existing`;
      const shared = `${prefix}shared`;
      await store.append(existing, [event('Created')], { expectedRevision: 'no_stream' });
      const plan: { stream: string; expected: ExpectedRevision; conflicts: boolean }[] = [];
      for (let index = 0; index < 12; index++) {
        plan.push({ stream: `${prefix}fresh-${index}`, expected: 'no_stream', conflicts: false });
        if (index % 4 === 0) plan.push({ stream: existing, expected: 'no_stream', conflicts: true });
        if (index % 4 === 1)
          plan.push({ stream: `${prefix}missing`, expected: 'stream_exists', conflicts: true });
        if (index % 4 === 2) plan.push({ stream: existing, expected: 5, conflicts: true });
        if (index % 3 === 0) plan.push({ stream: shared, expected: 'any', conflicts: false });
      }
      const written = plan.map((one, index) => [
        event('First', { index }, { event_id: randomUUID() }),
        event('Second', { index }, { event_id: randomUUID() }),
      ]);
      const outcomes = await Promise.allSettled(
        plan.map((one, index) =>
          store.append(one.stream, written[index]!, { expectedRevision: one.expected }),
        ),
      );

      const results: AppendResult[] = [];
      for (const [index, outcome] of outcomes.entries()) {
        const { stream, expected, conflicts } = plan[index]!;
        if (conflicts) {
          expect(outcome.status).toBe('rejected');
          const reason = (outcome as PromiseRejectedResult).reason as unknown;
          expect(reason).toBeInstanceOf(WrongExpectedRevisionError);
          expect(reason).toMatchObject({ stream, expected });
          continue;
        }
        expect(outcome.status).toBe('fulfilled');
        const result = (outcome as PromiseFulfilledResult<AppendResult>).value;
        results.push(result);
        // Read-your-writes: the stream has the append the moment the call returns.
        const stored = await store.readStream(stream);
        const own = stored.filter(
          (recorded) => recorded.revision >= result.revision - 1 && recorded.revision <= result.revision,
        );
        expect(own.map((recorded) => recorded.event_id)).toEqual(written[index]!.map((e) => e.event_id));
        expect(own.at(-1)).toMatchObject({ revision: result.revision, position: result.position });
      }
      expect(await store.readStream(existing)).toHaveLength(1);
      expect(await store.readStream(`${prefix}missing`)).toEqual([]);
      // The appends to one stream each got their own revisions, back to back.
      const sharedEvents = await store.readStream(shared);
      expect(sharedEvents.map((recorded) => recorded.revision)).toEqual(
        Array.from({ length: sharedEvents.length }, (_, revision) => revision),
      );
      expect(sharedEvents).toHaveLength(2 * plan.filter((one) => one.stream === shared).length);

      // In the log: every stored event once, in strictly increasing positions, each stream in order.
      const stored = plan.filter((one) => !one.conflicts).length * 2 + 1;
      const all = await readAllVisible(store, prefix, stored);
      expect(all).toHaveLength(stored);
      expectStrictlyIncreasing(all);
      for (const stream of new Set(all.map((recorded) => recorded.stream))) {
        const revisions = all.filter((recorded) => recorded.stream === stream).map((e) => e.revision);
        expect(revisions).toEqual([...revisions].sort((a, b) => a - b));
      }
      for (const result of results)
        expect(all.some((recorded) => comparePositions(recorded.position, result.position) === 0)).toBe(true);
    });

    itWithOpenTransactions(
      'readAll never skips an event whose transaction took its position first and committed last',
      async () => {
        const prefix = uniquePrefix();
        const open = await harness.appendInOpenTransaction!(`${prefix}a`, [event('A1'), event('A2')]);
        let beforeCommit: RecordedEvent[];
        try {
          await store.append(`${prefix}b`, [event('B1')], { expectedRevision: 'no_stream' });
          beforeCommit = await store.readAll({ limit: 100, streamPrefixes: [prefix] });
        } finally {
          await open.commit();
        }
        // Continue from the last position seen, as a subscriber would.
        const seen = [...beforeCommit];
        const deadline = Date.now() + waitLimitMs;
        while (seen.length < 3 && Date.now() < deadline) {
          const next = await store.readAll({
            after: seen.at(-1)?.position,
            limit: 100,
            streamPrefixes: [prefix],
          });
          seen.push(...next);
          if (next.length === 0) await delay(10);
        }
        expect(seen.map((e) => e.type).sort()).toEqual(['A1', 'A2', 'B1']);
        expect(seen.map((e) => e.type).filter((type) => type.startsWith('A'))).toEqual(['A1', 'A2']);
        expectStrictlyIncreasing(seen);
      },
    );

    itWithOpenTransactions(
      'a running subscription delivers late-committing events exactly once, none skipped',
      async () => {
        const prefix = uniquePrefix();
        const received = collector();
        subscribe({ streamPrefixes: [prefix], onEvents: (batch) => received.onEvents(batch) });
        const open = await harness.appendInOpenTransaction!(`${prefix}a`, [event('A1'), event('A2')]);
        try {
          await store.append(`${prefix}b`, [event('B1')], { expectedRevision: 'no_stream' });
          // Not synchronisation: a window in which a subscription without the fence would read B1.
          await delay(300);
        } finally {
          await open.commit();
        }
        await received.until(3);
        await store.append(`${prefix}c`, [event('C1')], { expectedRevision: 'no_stream' });
        await received.until(4);
        expect(received.events.map((e) => e.type).sort()).toEqual(['A1', 'A2', 'B1', 'C1']);
        expect(received.events.at(-1)!.type).toBe('C1');
        expectStrictlyIncreasing(received.events);
      },
    );

    it('subscribes from a checkpoint and delivers only what comes after it', async () => {
      const prefix = uniquePrefix();
      const stream = `${prefix}c`;
      await store.append(stream, [event('C0'), event('C1'), event('C2')], { expectedRevision: 'no_stream' });
      const [, checkpoint] = await readAllVisible(store, prefix, 3);

      const received = collector();
      const subscription = subscribe({
        after: checkpoint!.position,
        streamPrefixes: [prefix],
        onEvents: (batch) => received.onEvents(batch),
      });
      await received.until(1);
      await store.append(stream, [event('C3')], { expectedRevision: 2 });
      await received.until(2);
      await subscription.stop();
      expect(received.events.map((e) => e.type)).toEqual(['C2', 'C3']);
    });

    it('filters by stream prefix, literally', async () => {
      const prefix = uniquePrefix();
      for (const stream of ['alpha-1', 'beta-1', 'alphabet', 'gamma-1', 'alpha-2']) {
        await store.append(`${prefix}${stream}`, [event(stream)], { expectedRevision: 'no_stream' });
      }
      const streamPrefixes = [`${prefix}alpha-`, `${prefix}gamma-`];
      const received = collector();
      const subscription = subscribe({ streamPrefixes, onEvents: (batch) => received.onEvents(batch) });
      await received.until(3);
      await subscription.stop();
      expect(received.events.map((e) => e.type)).toEqual(['alpha-1', 'gamma-1', 'alpha-2']);
      expect(await store.readAll({ limit: 10, streamPrefixes })).toEqual(received.events);
      expect(await store.readAll({ limit: 10, streamPrefixes: [`${prefix}%`, `${prefix}_lpha`] })).toEqual(
        [],
      );
    });

    it('delivers in batches of at most batchSize, one onEvents call at a time', async () => {
      const prefix = uniquePrefix();
      const written = Array.from({ length: 25 }, (_, index) => event(`E${index}`));
      await store.append(`${prefix}s`, written, { expectedRevision: 'no_stream' });
      const received = collector();
      const subscription = subscribe({
        streamPrefixes: [prefix],
        batchSize: 10,
        onEvents: (batch) => received.onEvents(batch),
      });
      await received.until(25);
      await subscription.stop();
      expect(received.events.map((e) => e.type)).toEqual(written.map((e) => e.type));
      expect(Math.max(...received.batchSizes)).toBeLessThanOrEqual(10);
      expect(received.maxInFlight).toBe(1);
    });

    it('wakes a caught-up subscription promptly when new events are written', async () => {
      const prefix = uniquePrefix();
      const received = collector();
      subscribe({ streamPrefixes: [prefix], onEvents: (batch) => received.onEvents(batch) });
      // Each round waits at most the wait limit: a fallback poll several times slower would let
      // all three through in time only by a rare chance.
      for (let round = 1; round <= 3; round++) {
        await store.append(`${prefix}s`, [event(`E${round}`)], { expectedRevision: 'any' });
        await received.until(round);
      }
    });

    it('stop() resolves only after the onEvents call in progress finished, and nothing follows', async () => {
      const prefix = uniquePrefix();
      const entered = deferred();
      const release = deferred();
      let calls = 0;
      let finished = false;
      const subscription = subscribe({
        streamPrefixes: [prefix],
        onEvents: async () => {
          calls++;
          entered.resolve();
          await release.promise;
          finished = true;
        },
      });
      await store.append(`${prefix}s`, [event('S1')], { expectedRevision: 'no_stream' });
      await withTimeout(entered.promise, 'the first delivery');

      let stopped = false;
      const stopping = subscription.stop().then(() => (stopped = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(stopped).toBe(false);
      release.resolve();
      await withTimeout(stopping, 'stop()');
      expect(finished).toBe(true);

      // A witness subscription sees the next write; the stopped one must not.
      const witness = collector();
      const witnessSubscription = subscribe({
        streamPrefixes: [prefix],
        onEvents: (b) => witness.onEvents(b),
      });
      await witness.until(1);
      await store.append(`${prefix}s`, [event('S2')], { expectedRevision: 0 });
      await witness.until(2);
      await witnessSubscription.stop();
      expect(calls).toBe(1);
      await subscription.stop(); // stopping twice is harmless
    });

    it('can be stopped from inside onEvents', async () => {
      const prefix = uniquePrefix();
      await store.append(`${prefix}s`, [event('S1'), event('S2')], { expectedRevision: 'no_stream' });
      const delivered: string[] = [];
      const subscription: Subscription = subscribe({
        streamPrefixes: [prefix],
        batchSize: 1,
        onEvents: async (batch) => {
          delivered.push(...batch.map((e) => e.type));
          await subscription.stop();
        },
      });
      await withTimeout(
        (async () => {
          while (delivered.length === 0) await delay(5);
        })(),
        'the first delivery',
      );
      await withTimeout(subscription.stop(), 'stop()');
      expect(delivered).toEqual(['S1']);
    });

    it('stops and reports the error when onEvents throws', async () => {
      const prefix = uniquePrefix();
      await store.append(`${prefix}s`, [event('S1'), event('S2')], { expectedRevision: 'no_stream' });
      const failure = new Error('projection failed');
      const reported = deferred<unknown>();
      let calls = 0;
      const subscription = subscribe({
        streamPrefixes: [prefix],
        batchSize: 1,
        onEvents: async () => {
          calls++;
          throw failure;
        },
        onError: (error) => reported.resolve(error),
      });
      expect(await withTimeout(reported.promise, 'onError')).toBe(failure);
      await withTimeout(subscription.stop(), 'stop()');
      expect(calls).toBe(1);
    });
  });
}

/** Where a crashing appender is killed: after its claim is taken, or after its events are stored. */
export type CrashStage = 'after-claim' | 'after-append';

export interface UniquenessHarness {
  /** A store keeping claims by contractUniquenessRules; called once for the suite. */
  createStore(): Promise<EventStore>;
  /** Called after the store was closed. */
  cleanup(): Promise<void>;
  /**
   * Adapters where the claim and the append are two steps (an event store outside PostgreSQL):
   * enables the crash cases.
   */
  crash?: {
    /** Another process appends `events` to `stream` through such a store and is killed (SIGKILL) at `stage`. */
    appendAndKill(stage: CrashStage, stream: string, events: NewEvent[]): Promise<void>;
    /** Settles every pending append now, as the repair does once their grace is over. */
    repairNow(): Promise<void>;
  };
}

/** Uniqueness claims: at most one holder per key, under concurrency and across crashes. */
export function uniquenessContract(name: string, harness: UniquenessHarness): void {
  describe(`event store uniqueness contract: ${name}`, () => {
    let store: EventStore;
    const address = () => `${randomUUID().slice(0, 8)}@example.com`;

    beforeAll(async () => {
      store = await harness.createStore();
    });

    afterAll(async () => {
      await store?.close();
      await harness.cleanup();
    });

    it('gives a key to exactly one of 50 racing claimants; the others store nothing', async () => {
      const prefix = uniquePrefix();
      const email = address();
      const outcomes = await Promise.allSettled(
        Array.from({ length: 50 }, (_, index) =>
          store.append(`${prefix}${index}`, [invited(`${prefix}${index}`, email)], {
            expectedRevision: 'no_stream',
          }),
        ),
      );
      const winners = outcomes.flatMap((outcome, index) => (outcome.status === 'fulfilled' ? [index] : []));
      expect(winners).toHaveLength(1);
      const winner = `${prefix}${winners[0]}`;
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') {
          expect(outcome.reason).toBeInstanceOf(UniqueClaimTaken);
          expect(outcome.reason).toMatchObject({ scope: contractClaimScope, holder: winner });
        }
      }
      expect(await store.claimHolder(contractClaimScope, email)).toBe(winner);
      const stored = await readAllVisible(store, prefix, 1);
      expect(stored.map((recorded) => recorded.stream)).toEqual([winner]);
    });

    it('fails exactly the claims of appends made at once that another holds; the others hold theirs', async () => {
      const prefix = uniquePrefix();
      const taken = address();
      await store.append(`${prefix}holder`, [invited(`${prefix}holder`, taken)], {
        expectedRevision: 'no_stream',
      });
      const contested = address();
      // Made in one go, so that a store that commits appends together puts them in one batch.
      const plan = Array.from({ length: 24 }, (_, index) => {
        const invitation = `${prefix}${index}`;
        const email = index % 6 === 0 ? taken : index % 6 === 3 ? contested : address();
        return { invitation, email };
      });
      // Who holds the key, as committed, the moment a refusal reaches its caller: the holder it names.
      const committedAtRefusal = new Map<string, string | undefined>();
      const outcomes = await Promise.allSettled(
        plan.map(({ invitation, email }) =>
          store
            .append(invitation, [invited(invitation, email)], { expectedRevision: 'no_stream' })
            .catch(async (error: unknown) => {
              committedAtRefusal.set(invitation, await store.claimHolder(contractClaimScope, email));
              throw error;
            }),
        ),
      );

      const contestedWinners = plan.filter(
        ({ email }, index) => email === contested && outcomes[index]!.status === 'fulfilled',
      );
      expect(contestedWinners).toHaveLength(1);
      for (const [index, { invitation, email }] of plan.entries()) {
        const outcome = outcomes[index]!;
        const loses =
          email === taken || (email === contested && invitation !== contestedWinners[0]!.invitation);
        if (loses) {
          expect(outcome.status).toBe('rejected');
          const reason = (outcome as PromiseRejectedResult).reason as unknown;
          expect(reason).toBeInstanceOf(UniqueClaimTaken);
          const holder = email === taken ? `${prefix}holder` : contestedWinners[0]!.invitation;
          expect(reason).toMatchObject({ scope: contractClaimScope, holder });
          // Where the claim and the append are one step, a refusal names only a committed holder;
          // where they are two (an event store outside PostgreSQL), the holder may still be
          // finishing its append when the refusal comes.
          if (!harness.crash) expect(committedAtRefusal.get(invitation)).toBe(holder);
          expect(await store.readStream(invitation)).toEqual([]);
        } else {
          expect(outcome.status).toBe('fulfilled');
          expect(await store.claimHolder(contractClaimScope, email)).toBe(invitation);
          expect(await store.readStream(invitation)).toHaveLength(1);
        }
      }
      expect(await store.claimHolder(contractClaimScope, taken)).toBe(`${prefix}holder`);
    });

    it('frees a key when its holder releases it, and never keeps the key in the error', async () => {
      const prefix = uniquePrefix();
      const email = address();
      await store.append(`${prefix}a`, [invited('a', email)], { expectedRevision: 'no_stream' });
      const refused = await store
        .append(`${prefix}b`, [invited('b', email)], { expectedRevision: 'no_stream' })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(UniqueClaimTaken);
      expect(`${String(refused)} ${JSON.stringify(refused)}`).not.toContain(email);
      await store.append(`${prefix}a`, [withdrawn('a')], { expectedRevision: 0 });
      expect(await store.claimHolder(contractClaimScope, email)).toBeUndefined();
      await store.append(`${prefix}b`, [invited('b', email)], { expectedRevision: 'no_stream' });
      expect(await store.claimHolder(contractClaimScope, email)).toBe('b');
    });

    it('holds nothing for an append refused by its expected revision', async () => {
      const prefix = uniquePrefix();
      const email = address();
      await expectWrongRevision(
        store.append(`${prefix}a`, [invited('a', email)], { expectedRevision: 3 }),
        `${prefix}a`,
        3,
      );
      expect(await store.claimHolder(contractClaimScope, email)).toBeUndefined();
      await store.append(`${prefix}b`, [invited('b', email)], { expectedRevision: 'no_stream' });
      expect(await store.claimHolder(contractClaimScope, email)).toBe('b');
    });

    if (harness.crash) {
      const crash = harness.crash;
      it('repairs a kill between the claim and the append: the reservation goes, the key is free again', async () => {
        const prefix = uniquePrefix();
        const email = address();
        await crash.appendAndKill('after-claim', `${prefix}dead`, [invited('dead', email)]);
        // Reserved, not held: nobody else may take it meanwhile, and nothing was stored.
        expect(await store.claimHolder(contractClaimScope, email)).toBeUndefined();
        await expect(
          store.append(`${prefix}rival`, [invited('rival', email)], { expectedRevision: 'no_stream' }),
        ).rejects.toMatchObject({ name: 'UniqueClaimTaken', holder: 'dead' });
        await crash.repairNow();
        expect(await store.readStream(`${prefix}dead`)).toEqual([]);
        await store.append(`${prefix}rival`, [invited('rival', email)], { expectedRevision: 'no_stream' });
        expect(await store.claimHolder(contractClaimScope, email)).toBe('rival');
      });

      it('repairs a kill between the append and its settlement: the stored event keeps its claim', async () => {
        const prefix = uniquePrefix();
        const email = address();
        await crash.appendAndKill('after-append', `${prefix}dead`, [invited('dead', email)]);
        expect((await store.readStream(`${prefix}dead`)).map((recorded) => recorded.type)).toEqual([
          'Invited',
        ]);
        await crash.repairNow();
        expect(await store.claimHolder(contractClaimScope, email)).toBe('dead');
        await expect(
          store.append(`${prefix}rival`, [invited('rival', email)], { expectedRevision: 'no_stream' }),
        ).rejects.toMatchObject({ name: 'UniqueClaimTaken', holder: 'dead' });
      });
    }
  });
}

/**
 * Appends to several streams in one commit (appendStreams): all of them or none, whatever refuses
 * (a wrong revision of any stream, a taken claim of any event). A store given contractUniquenessRules.
 */
export function multiStreamAppendContract(name: string, harness: UniquenessHarness): void {
  describe(`event store multi-stream append contract: ${name}`, () => {
    let store: EventStore;
    const address = () => `${randomUUID().slice(0, 8)}@example.com`;

    beforeAll(async () => {
      store = await harness.createStore();
    });

    afterAll(async () => {
      await store?.close();
      await harness.cleanup();
    });

    it('stores every stream of the call in one commit, each from its own revision', async () => {
      const prefix = uniquePrefix();
      await store.append(`${prefix}b`, [event('B0')], { expectedRevision: 'no_stream' });
      const result = await store.appendStreams([
        { stream: `${prefix}a`, events: [event('A0'), event('A1')], expectedRevision: 'no_stream' },
        { stream: `${prefix}b`, events: [event('B1')], expectedRevision: 0 },
      ]);
      const stored = await readAllVisible(store, prefix, 4);
      expect(stored.map((recorded) => [recorded.type, recorded.revision])).toEqual([
        ['B0', 0],
        ['A0', 0],
        ['A1', 1],
        ['B1', 1],
      ]);
      expect(new Set(stored.slice(1).map((recorded) => recorded.position.commit)).size).toBe(1);
      expect(result.position).toEqual(stored.at(-1)!.position);
    });

    it('stores nothing when one stream is not at its expected revision', async () => {
      const prefix = uniquePrefix();
      await store.append(`${prefix}taken`, [event('T0')], { expectedRevision: 'no_stream' });
      await expect(
        store.appendStreams([
          { stream: `${prefix}new`, events: [event('N0')], expectedRevision: 'no_stream' },
          { stream: `${prefix}taken`, events: [event('T1')], expectedRevision: 'no_stream' },
        ]),
      ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.readStream(`${prefix}new`)).toEqual([]);
      expect(await store.readStream(`${prefix}taken`)).toHaveLength(1);
    });

    it('stores nothing, and takes no claim, when one event claims a key another holds', async () => {
      const prefix = uniquePrefix();
      const held = address();
      const free = address();
      await store.append(`${prefix}holder`, [invited(`${prefix}holder`, held)], {
        expectedRevision: 'no_stream',
      });
      await expect(
        store.appendStreams([
          { stream: `${prefix}one`, events: [invited(`${prefix}one`, free)], expectedRevision: 'no_stream' },
          { stream: `${prefix}two`, events: [invited(`${prefix}two`, held)], expectedRevision: 'no_stream' },
        ]),
      ).rejects.toBeInstanceOf(UniqueClaimTaken);
      expect(await store.readStream(`${prefix}one`)).toEqual([]);
      expect(await store.claimHolder(contractClaimScope, free)).toBeUndefined();
      expect(await store.claimHolder(contractClaimScope, held)).toBe(`${prefix}holder`);
    });
  });
}
