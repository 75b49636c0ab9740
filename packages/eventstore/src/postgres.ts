import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Migration, Queryable } from '@tokenvault/platform';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type Subscription,
  type SubscriptionOptions,
} from './port.ts';
import { observeAppend } from './metrics.ts';

const notifyChannel = 'es_events';

export const eventStoreMigrations: Migration[] = [
  {
    id: 'eventstore/001_events',
    sql: `
      -- One row per stream: the optimistic-concurrency check locks and updates it. transaction_id is
      -- the last writer's, so that a stream's events never go backwards in commit order.
      CREATE TABLE es_streams (
        stream_id text PRIMARY KEY,
        revision bigint NOT NULL,
        transaction_id xid8 NOT NULL
      );

      CREATE TABLE es_events (
        global_position bigserial PRIMARY KEY,
        transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
        stream_id text NOT NULL,
        stream_revision bigint NOT NULL,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        data jsonb NOT NULL,
        metadata jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT es_events_event_id_unique UNIQUE (event_id),
        CONSTRAINT es_events_stream_revision_unique UNIQUE (stream_id, stream_revision)
      );

      -- Commit order, read by readAll and the subscriptions.
      CREATE INDEX es_events_commit_order ON es_events (transaction_id, global_position);

      -- Subscribers LISTEN on this channel; notifications are delivered at commit.
      CREATE FUNCTION es_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM inserted) THEN
          PERFORM pg_notify('${notifyChannel}', '');
        END IF;
        RETURN NULL;
      END
      $$;

      CREATE TRIGGER es_events_notify AFTER INSERT ON es_events
        REFERENCING NEW TABLE AS inserted
        FOR EACH STATEMENT EXECUTE FUNCTION es_events_notify();

      GRANT SELECT, INSERT, UPDATE ON es_streams TO {{app_role}};
      GRANT SELECT, INSERT ON es_events TO {{app_role}};
      GRANT USAGE ON SEQUENCE es_events_global_position_seq TO {{app_role}};
    `,
  },
];

// ---------------------------------------------------------------------------------------------
// Append

/*
 * The stream step of the append statement, one per kind of expectation. $1 stream, $3 number of
 * events, $4 expected revision. Each returns the revision before the append, or no row when the
 * expectation fails.
 *
 * Commit order is transaction id order, so a stream's events must be written in the order of their
 * transaction ids. The advisory lock (taken without a transaction id) serialises the writers of a
 * stream before they get their ids, so a later writer always has the younger id; the
 * `transaction_id <= pg_current_xact_id()` guard refuses the rest: a transaction that got its id
 * earlier (it wrote something else first) and reaches the stream after a younger one.
 */
const streamSteps = {
  any: `
    INSERT INTO es_streams AS s (stream_id, revision, transaction_id)
    SELECT lock.stream_id, $3::int - 1, pg_current_xact_id() FROM lock
    ON CONFLICT (stream_id) DO UPDATE
      SET revision = s.revision + $3::int, transaction_id = pg_current_xact_id()
      WHERE s.transaction_id <= pg_current_xact_id()
    RETURNING s.revision - $3::int AS previous`,
  no_stream: `
    INSERT INTO es_streams (stream_id, revision, transaction_id)
    SELECT lock.stream_id, $3::int - 1, pg_current_xact_id() FROM lock
    ON CONFLICT (stream_id) DO NOTHING
    RETURNING -1::bigint AS previous`,
  stream_exists: `
    UPDATE es_streams AS s SET revision = s.revision + $3::int, transaction_id = pg_current_xact_id()
    WHERE s.stream_id = (SELECT stream_id FROM lock) AND s.transaction_id <= pg_current_xact_id()
    RETURNING s.revision - $3::int AS previous`,
  revision: `
    UPDATE es_streams AS s SET revision = s.revision + $3::int, transaction_id = pg_current_xact_id()
    WHERE s.stream_id = (SELECT stream_id FROM lock) AND s.revision = $4::bigint
      AND s.transaction_id <= pg_current_xact_id()
    RETURNING s.revision - $3::int AS previous`,
} as const;

// Two-key advisory locks live apart from single-key ones (the migration lock); 0x6573 is 'es'.
const streamLockNamespace = 0x6573;

type StreamStep = keyof typeof streamSteps;

// One statement, one round trip: the events are inserted only when the stream step returned a row.
const appendStatements = Object.fromEntries(
  Object.entries(streamSteps).map(([step, sql]) => [
    step,
    `WITH lock AS MATERIALIZED (
       SELECT $1::text AS stream_id, pg_advisory_xact_lock(${streamLockNamespace}, hashtext($1::text))
     ),
     stream AS (${sql}),
     appended AS (
       INSERT INTO es_events (stream_id, stream_revision, event_id, event_type, data, metadata)
       SELECT $1::text, stream.previous + e.ordinality, (e.event->>'event_id')::uuid, e.event->>'type',
              e.event->'data', e.event->'metadata'
       FROM stream CROSS JOIN jsonb_array_elements($2::jsonb) WITH ORDINALITY AS e(event, ordinality)
       ORDER BY e.ordinality
       RETURNING stream_revision, global_position, transaction_id
     )
     SELECT stream_revision, global_position::text AS global_position, transaction_id::text AS transaction_id
     FROM appended ORDER BY stream_revision DESC LIMIT 1`,
  ]),
) as Record<StreamStep, string>;

interface AppendStatement {
  step: StreamStep;
  values: unknown[];
}

function prepareAppend(
  stream: string,
  events: NewEvent[],
  expectedRevision: ExpectedRevision,
): AppendStatement {
  if (typeof stream !== 'string' || stream.length === 0) throw new TypeError('stream name must not be empty');
  if (!Array.isArray(events) || events.length === 0) throw new TypeError('append needs at least one event');
  const rows = events.map((event, index) => {
    if (typeof event.type !== 'string' || event.type.length === 0) {
      throw new TypeError(`event ${index} has no type`);
    }
    if (event.data === undefined) throw new TypeError(`event ${index} has no data`);
    if (typeof event.metadata !== 'object' || event.metadata === null) {
      throw new TypeError(`event ${index} has no metadata`);
    }
    return {
      event_id: event.event_id ?? randomUUID(),
      type: event.type,
      data: event.data,
      metadata: event.metadata,
    };
  });
  let step: StreamStep;
  let expected: number | null = null;
  if (typeof expectedRevision === 'number') {
    if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
      throw new TypeError(`expected revision must be a non-negative integer, got ${expectedRevision}`);
    }
    step = 'revision';
    expected = expectedRevision;
  } else if (
    expectedRevision === 'any' ||
    expectedRevision === 'no_stream' ||
    expectedRevision === 'stream_exists'
  ) {
    step = expectedRevision;
  } else {
    throw new TypeError(`unknown expected revision ${String(expectedRevision)}`);
  }
  const values: unknown[] = [stream, JSON.stringify(rows), rows.length];
  if (expected !== null) values.push(expected);
  return { step, values };
}

interface AppendRow {
  stream_revision: number | string;
  global_position: string;
  transaction_id: string;
}

/** One attempt; null when the stream step refused (wrong revision, or a younger writer). */
async function tryAppend(db: Queryable, statement: AppendStatement): Promise<AppendResult | null> {
  let rows: AppendRow[];
  try {
    ({ rows } = await db.query<AppendRow>({
      name: `es_append_${statement.step}`,
      text: appendStatements[statement.step],
      values: statement.values,
    }));
  } catch (error) {
    // Only reachable if es_streams and es_events disagree; still a concurrency conflict.
    if (isUniqueViolation(error, 'es_events_stream_revision_unique')) return null;
    throw error;
  }
  const row = rows[0];
  if (!row) return null;
  return {
    revision: Number(row.stream_revision),
    position: { commit: row.transaction_id, prepare: row.global_position },
  };
}

function isUniqueViolation(error: unknown, constraint: string): boolean {
  const details = error as { code?: unknown; constraint?: unknown } | null;
  return details?.code === '23505' && details.constraint === constraint;
}

/**
 * Appends within the caller's transaction (or on a pool, in a transaction of its own), in one
 * statement. Throws WrongExpectedRevisionError when the expectation fails, and also when a younger
 * transaction wrote the stream first: retrying the whole transaction resolves that case.
 */
export async function appendToStream(
  db: Queryable,
  stream: string,
  events: NewEvent[],
  options: { expectedRevision: ExpectedRevision },
): Promise<AppendResult> {
  const result = await tryAppend(db, prepareAppend(stream, events, options.expectedRevision));
  if (!result) throw new WrongExpectedRevisionError(stream, options.expectedRevision);
  return result;
}

// With `any`, only the ordering guard can refuse; a retry runs in a new transaction with a younger
// id, which the guard accepts. The advisory lock makes this a safety net rather than a path.
const maxAnyAppendAttempts = 3;

// ---------------------------------------------------------------------------------------------
// Reads

const eventColumns = `e.global_position::text AS global_position, e.transaction_id::text AS transaction_id,
  e.stream_id, e.stream_revision, e.event_id::text AS event_id, e.event_type, e.data, e.metadata, e.created_at`;

interface EventRow {
  global_position: string;
  transaction_id: string;
  stream_id: string;
  stream_revision: number | string;
  event_id: string;
  event_type: string;
  data: unknown;
  metadata: EventMetadata;
  created_at: Date;
}

const readStreamSql = `SELECT ${eventColumns} FROM es_events e WHERE e.stream_id = $1 ORDER BY e.stream_revision`;

/*
 * The snapshot fence: only transactions older than the oldest one still running are read, so a
 * transaction that took its ids early and commits late is never passed over. held_back tells that
 * committed rows exist beyond the fence (some other transaction is still open), so the caller
 * should look again soon rather than wait for a notification that has already come.
 */
const readAllSql = `
  WITH fence AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
  batch AS (
    SELECT e.* FROM es_events e, fence
    WHERE e.transaction_id < fence.xmin
      AND (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint)
      AND ($3::text[] IS NULL OR EXISTS (
        SELECT 1 FROM unnest($3::text[]) AS p(prefix) WHERE starts_with(e.stream_id, p.prefix)))
    ORDER BY e.transaction_id, e.global_position
    LIMIT $4
  )
  SELECT held.held_back, ${eventColumns}
  FROM (SELECT EXISTS (SELECT 1 FROM es_events h, fence WHERE h.transaction_id >= fence.xmin) AS held_back) held
  LEFT JOIN batch e ON true
  ORDER BY e.transaction_id, e.global_position`;

type ReadAllRow = { held_back: boolean } & (EventRow | { [K in keyof EventRow]: null });

interface Batch {
  events: RecordedEvent[];
  heldBack: boolean;
}

const origin: Position = { commit: '0', prepare: '0' };

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    event_id: row.event_id,
    type: row.event_type,
    data: row.data,
    metadata: row.metadata,
    stream: row.stream_id,
    revision: Number(row.stream_revision),
    position: { commit: row.transaction_id, prepare: row.global_position },
    created_at: row.created_at,
  };
}

function assertLimit(limit: number, name: string): void {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`${name} must be a positive integer`);
}

// ---------------------------------------------------------------------------------------------
// Store

export interface PostgresEventStoreOptions {
  /** For the dedicated LISTEN connection; defaults to the pool's connection settings. */
  listenConnectionString?: string;
  /** Creates the (unconnected) LISTEN client instead; takes precedence over the connection string. */
  createListenClient?: () => pg.Client;
  /** Fallback poll when no notification comes (a lost connection, say). Default 250 ms. */
  pollIntervalMs?: number;
  /** Longest wait before re-reading rows held back by the fence. Default: pollIntervalMs. */
  fenceRetryMaxDelayMs?: number;
  /** Subscription batch size when SubscriptionOptions.batchSize is absent. Default 500. */
  batchSize?: number;
  /** Errors the store recovers from on its own (LISTEN connection lost, a failed read it retries). */
  onBackgroundError?: (error: unknown) => void;
}

const firstFenceRetryDelayMs = 5;
const maxReconnectDelayMs = 5_000;

/**
 * The PostgreSQL event store. The pool belongs to the caller: close() stops the subscriptions and
 * the LISTEN connection, and leaves the pool open.
 */
export class PostgresEventStore implements EventStore {
  private readonly pollIntervalMs: number;
  private readonly fenceRetryMaxDelayMs: number;
  private readonly batchSize: number;
  private readonly notifier: ChangeNotifier;
  private readonly subscriptions = new Set<PostgresSubscription>();
  private closed = false;

  private readonly pool: pg.Pool;
  private readonly options: PostgresEventStoreOptions;
  constructor(pool: pg.Pool, options: PostgresEventStoreOptions = {}) {
    this.pool = pool;
    this.options = options;
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    this.fenceRetryMaxDelayMs = options.fenceRetryMaxDelayMs ?? this.pollIntervalMs;
    this.batchSize = options.batchSize ?? 500;
    assertLimit(this.pollIntervalMs, 'pollIntervalMs');
    assertLimit(this.fenceRetryMaxDelayMs, 'fenceRetryMaxDelayMs');
    assertLimit(this.batchSize, 'batchSize');
    const createClient =
      options.createListenClient ??
      (() =>
        new pg.Client(
          options.listenConnectionString
            ? { connectionString: options.listenConnectionString }
            : pool.options,
        ));
    this.notifier = new ChangeNotifier(createClient, (error) => this.reportBackgroundError(error));
  }

  async append(
    stream: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision },
  ): Promise<AppendResult> {
    return observeAppend(stream, events.length, async () => {
      const statement = prepareAppend(stream, events, options.expectedRevision);
      const attempts = statement.step === 'any' ? maxAnyAppendAttempts : 1;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const result = await tryAppend(this.pool, statement);
        if (result) return result;
      }
      throw new WrongExpectedRevisionError(stream, options.expectedRevision);
    });
  }

  async readStream(stream: string): Promise<RecordedEvent[]> {
    const { rows } = await this.pool.query<EventRow>({
      name: 'es_read_stream',
      text: readStreamSql,
      values: [stream],
    });
    return rows.map(toRecordedEvent);
  }

  async readAll(options: {
    after?: Position;
    limit: number;
    streamPrefixes?: string[];
  }): Promise<RecordedEvent[]> {
    return (await this.readBatch(options.after, options.limit, options.streamPrefixes)).events;
  }

  async headPosition(): Promise<Position | undefined> {
    const { rows } = await this.pool.query<{ commit: string; prepare: string }>(
      `SELECT transaction_id::text AS commit, global_position::text AS prepare FROM es_events
       ORDER BY transaction_id DESC, global_position DESC LIMIT 1`,
    );
    return rows[0];
  }

  subscribeAll(options: SubscriptionOptions): Subscription {
    if (this.closed) throw new Error('the event store is closed');
    const batchSize = options.batchSize ?? this.batchSize;
    assertLimit(batchSize, 'batchSize');
    const subscription = new PostgresSubscription(options, {
      batchSize,
      pollIntervalMs: this.pollIntervalMs,
      fenceRetryMaxDelayMs: this.fenceRetryMaxDelayMs,
      read: (after) => this.readBatch(after, batchSize, options.streamPrefixes),
      listen: (wake) => this.notifier.listen(wake),
      reportBackgroundError: (error) => this.reportBackgroundError(error),
    });
    this.subscriptions.add(subscription);
    void subscription.finished.then(() => this.subscriptions.delete(subscription));
    return subscription;
  }

  /** Stops every subscription and ends the LISTEN connection; the pool stays open. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    await this.notifier.close();
  }

  private async readBatch(
    after: Position | undefined,
    limit: number,
    streamPrefixes?: string[],
  ): Promise<Batch> {
    assertLimit(limit, 'limit');
    const from = after ?? origin;
    const { rows } = await this.pool.query<ReadAllRow>({
      name: 'es_read_all',
      text: readAllSql,
      values: [from.commit, from.prepare, streamPrefixes ?? null, limit],
    });
    const events: RecordedEvent[] = [];
    for (const row of rows) if (row.event_id !== null) events.push(toRecordedEvent(row as EventRow));
    return { events, heldBack: rows[0]?.held_back ?? false };
  }

  private reportBackgroundError(error: unknown): void {
    try {
      this.options.onBackgroundError?.(error);
    } catch {
      // A failing reporter must not break the store.
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Wake-ups

/** One LISTEN connection per store, shared by its subscriptions; reconnects when it drops. */
class ChangeNotifier {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failedAttempts = 0;
  private closed = false;
  private readonly listeners = new Set<() => void>();

  private readonly createClient: () => pg.Client;
  private readonly reportError: (error: unknown) => void;
  constructor(createClient: () => pg.Client, reportError: (error: unknown) => void) {
    this.createClient = createClient;
    this.reportError = reportError;
  }

  /** Calls wake on every notification and after a reconnect; returns the unsubscribe function. */
  listen(wake: () => void): () => void {
    this.listeners.add(wake);
    this.ensureConnected();
    return () => this.listeners.delete(wake);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private ensureConnected(): void {
    if (this.closed || this.client || this.connecting || this.reconnectTimer) return;
    this.connecting = this.connect().finally(() => (this.connecting = undefined));
  }

  private async connect(): Promise<void> {
    const client = this.createClient();
    let dropped = false;
    const drop = (error?: unknown) => {
      if (dropped) return;
      dropped = true;
      if (error !== undefined && !this.closed) this.reportError(error);
      if (this.client === client) this.client = undefined;
      void client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on('notification', () => this.wakeAll());
    client.on('error', drop);
    client.on('end', () => drop());
    try {
      await client.connect();
      await client.query(`LISTEN ${notifyChannel}`);
    } catch (error) {
      drop(error);
      return;
    }
    if (this.closed || dropped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.failedAttempts = 0;
    // Notifications sent while there was no connection are lost: let everyone look.
    this.wakeAll();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer || this.listeners.size === 0) return;
    const delay = Math.min(100 * 2 ** this.failedAttempts, maxReconnectDelayMs);
    this.failedAttempts++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.ensureConnected();
    }, delay);
  }

  private wakeAll(): void {
    for (const wake of this.listeners) wake();
  }
}

// ---------------------------------------------------------------------------------------------
// Subscriptions

interface SubscriptionRuntime {
  batchSize: number;
  pollIntervalMs: number;
  fenceRetryMaxDelayMs: number;
  read(after: Position | undefined): Promise<Batch>;
  listen(wake: () => void): () => void;
  reportBackgroundError(error: unknown): void;
}

// Lets stop() called from inside onEvents return at once instead of waiting for itself.
const delivering = new AsyncLocalStorage<PostgresSubscription>();

class PostgresSubscription implements Subscription {
  readonly finished: Promise<void>;
  private stopped = false;
  private wakePending = false;
  private endWait: (() => void) | undefined;

  private readonly options: SubscriptionOptions;
  private readonly runtime: SubscriptionRuntime;
  constructor(options: SubscriptionOptions, runtime: SubscriptionRuntime) {
    this.options = options;
    this.runtime = runtime;
    this.finished = this.run().catch((error: unknown) => runtime.reportBackgroundError(error));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    if (delivering.getStore() === this) return;
    await this.finished;
  }

  private wake(): void {
    this.wakePending = true;
    this.endWait?.();
  }

  /** Waits for a wake-up or the timeout; returns at once when one came since the last read began. */
  private wait(ms: number): Promise<void> {
    if (this.wakePending || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endWait?.(), ms);
      this.endWait = () => {
        clearTimeout(timer);
        this.endWait = undefined;
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    const { batchSize, pollIntervalMs, fenceRetryMaxDelayMs } = this.runtime;
    const unlisten = this.runtime.listen(() => this.wake());
    let position = this.options.after;
    let fenceDelay = firstFenceRetryDelayMs;
    let errorDelay = firstFenceRetryDelayMs;
    try {
      while (!this.stopped) {
        this.wakePending = false;
        let batch: Batch;
        try {
          batch = await this.runtime.read(position);
          errorDelay = firstFenceRetryDelayMs;
        } catch (error) {
          if (this.stopped) break;
          this.runtime.reportBackgroundError(error);
          errorDelay = Math.min(errorDelay * 2, Math.max(pollIntervalMs, maxReconnectDelayMs));
          await this.wait(errorDelay);
          continue;
        }
        if (this.stopped) break;
        const last = batch.events.at(-1);
        if (last) {
          try {
            await delivering.run(this, () => this.options.onEvents(batch.events));
          } catch (error) {
            this.stopped = true;
            this.reportHandlerError(error);
            break;
          }
          position = last.position;
        }
        if (batch.events.length === batchSize) continue;
        if (batch.heldBack) {
          await this.wait(fenceDelay);
          fenceDelay = Math.min(fenceDelay * 2, fenceRetryMaxDelayMs);
          continue;
        }
        fenceDelay = firstFenceRetryDelayMs;
        await this.wait(pollIntervalMs);
      }
    } finally {
      unlisten();
    }
  }

  private reportHandlerError(error: unknown): void {
    try {
      this.options.onError?.(error);
    } catch (reportError) {
      this.runtime.reportBackgroundError(reportError);
    }
  }
}
