import pg from 'pg';
import { NotificationHub, withTransaction, type PoolClient } from '@tokenvault/platform';
import {
  comparePositions,
  WrongExpectedRevisionError,
  type AnyEvent,
  type AppendOptions,
  type AppendResult,
  type AppendSideData,
  type EventStore,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type RecordedOf,
  type ClaimChanges,
  type StreamAppend,
  type Subscription,
  type SubscriptionOptions,
  type UniquenessRules,
} from '../port.ts';
import { observeAppend } from '../append-metrics.ts';
import {
  appendOnce,
  appendQuery,
  prepareAppend,
  type Appended,
  type AppendStatement,
  preparedStreamAppends,
} from './append.ts';
import { applyClaimChanges, claimChangeQueries, readClaimHolder } from './claims.ts';
import { eventsAheadOfAppend, RecordingClient, sendInOneTransaction } from './append-pipeline.ts';
import {
  GroupCommit,
  settlePipelinedAppend,
  type GroupCommitOptions,
  type PipelinedAppend,
} from './group-commit.ts';
import { assertLimit, readBatch, readHeadPosition, readStream } from './read.ts';
import { eventsChannel } from './event-store-migrations.ts';
import { LogFeed, type FeedSubscription } from './log-feed.ts';

/**
 * A projection written in the append's own transaction: possible when the read models live in
 * the event store's PostgreSQL database. A read model written this way is up to date the moment
 * the append commits, and a constraint it holds refuses the append itself.
 */
export interface InlineProjection<E extends AnyEvent = AnyEvent> {
  /** Event types it handles; the others never reach apply, which sees the members of E. */
  handles: readonly E['type'][];
  /**
   * Usually called before the append has run, with a client that only records its statements
   * (store.ts, appendAhead): they are sent with the append in one round trip. Reading an event's
   * revision, position or created_at, or a statement's result, makes the store call it again
   * after the append, in an ordinary transaction. Either way its statements commit with the append
   * or not at all. `context.sideData`: what the append carried for its write-side steps (never
   * stored; absent when the events are applied later, by a projector or a rebuild).
   */
  apply(events: readonly RecordedOf<E>[], tx: PoolClient, context?: InlineApplyContext): Promise<void>;
}

/** What an inline projection learns of the append besides its events. */
export interface InlineApplyContext {
  sideData?: AppendSideData;
}

export interface PostgresEventStoreOptions {
  /** The process's LISTEN connection; the store makes its own from the pool's settings when absent. */
  notifications?: NotificationHub;
  /** Fallback poll when no notification comes (a lost connection, say). Default 250 ms. */
  pollIntervalMs?: number;
  /** Longest wait before re-reading rows held back by the fence. Default: pollIntervalMs. */
  fenceRetryMaxDelayMs?: number;
  /** Subscription batch size when SubscriptionOptions.batchSize is absent. Default 500. */
  batchSize?: number;
  /** Written in every append's transaction (see InlineProjection). */
  inlineProjections?: readonly InlineProjection[];
  /** The uniqueness records each event changes, kept in the append's transaction. */
  uniqueness?: UniquenessRules;
  /** After an append that wrote claims or inline projections commits, with its events (in-process caches). */
  onCommitted?: (events: readonly RecordedEvent[]) => void;
  /** Errors the store recovers from on its own (LISTEN connection lost, a failed read it retries). */
  onBackgroundError?: (error: unknown) => void;
  /** Appends that arrive together share one transaction (see GroupCommit); absent: each has its own. */
  groupCommit?: GroupCommitOptions;
}

// With `any`, only the ordering guard can refuse; a retry runs in a new transaction with a younger
// id, which the guard accepts. The advisory lock makes this a safety net rather than a path.
const maxAnyAppendAttempts = 3;

/** The longest a subscriber in another process waits, beyond its NOTIFY's own trip, for an append. */
const notifyIntervalMs = 5;

/** Inline projections of concurrent appends can lock the same read-model rows in either order. */
const maxDeadlockRetries = 3;
const isDeadlock = (error: unknown) => (error as { code?: unknown } | null)?.code === '40P01';

/**
 * The PostgreSQL event store. The pool belongs to the caller: close() stops the subscriptions
 * (and the LISTEN connection when the store made it) and leaves the pool open.
 */
export class PostgresEventStore implements EventStore {
  private readonly pollIntervalMs: number;
  private readonly fenceRetryMaxDelayMs: number;
  private readonly batchSize: number;
  private readonly notifications: NotificationHub;
  private readonly ownsNotifications: boolean;
  private readonly inline: readonly (readonly [InlineProjection, ReadonlySet<string>])[];
  private readonly inlineTypes: ReadonlySet<string>;
  private readonly subscriptions = new Set<FeedSubscription>();
  /** The log read once for every subscription of this store (one per process). */
  private readonly feed: LogFeed;
  private readonly groupCommit: GroupCommit | undefined;
  private closed = false;
  /** A NOTIFY is on its way; `notifyAgain`: appends committed since it was sent need another. */
  private notifying = false;
  private notifyAgain = false;

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
    this.inline = (options.inlineProjections ?? []).map(
      (projection) => [projection, new Set(projection.handles)] as const,
    );
    this.inlineTypes = new Set(this.inline.flatMap(([, types]) => [...types]));
    this.groupCommit = options.groupCommit && new GroupCommit(pool, options.groupCommit);
    this.ownsNotifications = options.notifications === undefined;
    this.notifications =
      options.notifications ??
      new NotificationHub({
        createClient: () => new pg.Client(pool.options),
        onError: (error) => this.reportBackgroundError(error),
      });
    this.feed = new LogFeed({
      pollIntervalMs: this.pollIntervalMs,
      fenceRetryMaxDelayMs: this.fenceRetryMaxDelayMs,
      read: (after, limit, streamPrefixes) => readBatch(this.pool, after, limit, streamPrefixes),
      listen: (wake) => {
        const unlisten = this.notifications.listen(eventsChannel, wake);
        // Notifications sent while the connection was down are lost: look again after each one.
        const unconnected = this.notifications.onConnected(wake);
        return () => {
          unlisten();
          unconnected();
        };
      },
      reportBackgroundError: (error) => this.reportBackgroundError(error),
    });
  }

  async append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult> {
    return observeAppend(stream, events.length, async () => {
      const statement = prepareAppend(stream, events, options.expectedRevision);
      const claims = statement.events.map((event) => this.options.uniqueness?.(event));
      // One statement when nothing else is written with it; a transaction around them otherwise
      // (with group commit, a transaction shared with the appends arriving together).
      const alone =
        !this.groupCommit &&
        claims.every((changes) => changes === undefined) &&
        statement.events.every((event) => !this.inlineTypes.has(event.type));
      const attempts = statement.step === 'any' ? maxAnyAppendAttempts : 1;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const appended = alone
          ? await appendOnce(this.pool, statement)
          : await this.appendWithin(statement, claims, { sideData: options.sideData });
        if (appended) {
          this.announceAppend();
          return appended.result;
        }
      }
      throw new WrongExpectedRevisionError(stream, options.expectedRevision);
    });
  }

  /**
   * Several streams in one transaction, statement by statement: each stream's append, then every
   * event's claims and the inline projections of all of them. Retried whole on a deadlock.
   */
  async appendStreams(
    appends: StreamAppend[],
    options: { sideData?: AppendSideData } = {},
  ): Promise<AppendResult> {
    const statements = preparedStreamAppends(appends);
    const total = statements.reduce((sum, statement) => sum + statement.events.length, 0);
    return observeAppend(statements[0]!.stream, total, async () => {
      const context: InlineApplyContext = options.sideData ? { sideData: options.sideData } : {};
      for (let retry = 0; ; retry++) {
        try {
          const stored = await withTransaction(this.pool, async (tx) => {
            const appended: Appended[] = [];
            for (const [index, statement] of statements.entries()) {
              const one = await appendOnce(tx, statement);
              if (!one)
                throw new WrongExpectedRevisionError(statement.stream, appends[index]!.expectedRevision);
              appended.push(one);
            }
            for (const statement of statements) {
              for (const event of statement.events) {
                const changes = this.options.uniqueness?.(event);
                if (changes) await applyClaimChanges(tx, changes);
              }
            }
            const recorded = appended.flatMap((one) => one.recorded);
            for (const [projection, types] of this.inline) {
              const handled = recorded.filter((event) => types.has(event.type));
              if (handled.length) await projection.apply(handled, tx, context);
            }
            return recorded;
          });
          try {
            this.options.onCommitted?.(stored);
          } catch (error) {
            this.reportBackgroundError(error);
          }
          this.announceAppend();
          const last = stored.reduce((latest, event) =>
            comparePositions(event.position, latest.position) > 0 ? event : latest,
          );
          return { revision: last.revision, position: last.position };
        } catch (error) {
          if (!isDeadlock(error) || retry >= maxDeadlockRetries) throw error;
        }
      }
    });
  }

  /**
   * The append, its events' uniqueness claims and every inline projection, in one transaction;
   * retried whole on a deadlock. In one round trip when the projections can run ahead of the append
   * (see appendAhead), in a transaction run statement by statement otherwise.
   */
  private async appendWithin(
    statement: AppendStatement,
    claims: readonly (ClaimChanges | undefined)[],
    context: InlineApplyContext,
  ): Promise<Appended | null> {
    for (let retry = 0; ; retry++) {
      try {
        const ahead = await this.appendAhead(statement, claims, context);
        const appended =
          ahead !== undefined
            ? ahead
            : await withTransaction(this.pool, async (tx) => {
                const stored = await appendOnce(tx, statement);
                if (!stored) return null;
                for (const changes of claims) if (changes) await applyClaimChanges(tx, changes);
                for (const [projection, types] of this.inline) {
                  const handled = stored.recorded.filter((event) => types.has(event.type));
                  if (handled.length) await projection.apply(handled, tx, context);
                }
                return stored;
              });
        if (appended) {
          try {
            this.options.onCommitted?.(appended.recorded);
          } catch (error) {
            // Committed already: a failing listener must not make the append look failed.
            this.reportBackgroundError(error);
          }
        }
        return appended;
      } catch (error) {
        if (!isDeadlock(error) || retry >= maxDeadlockRetries) throw error;
      }
    }
  }

  /**
   * The common case in one round trip: the inline projections run first, against a client that
   * records their statements (they write; they read neither results nor what only the stored
   * events know), then the append (refusing with an error, ES001), the claims (ES002) and those
   * statements go to PostgreSQL as one pipelined transaction. The first error in that order decides,
   * as it would statement by statement: a refused append is null, a taken claim UniqueClaimTaken.
   * Undefined when a projection could not run ahead (it needed the stored events or a result, or
   * it threw): the caller then runs the transaction step by step, whose errors are the ones an
   * append has always had. With group commit, the pipelined transaction is the batch's.
   */
  private async appendAhead(
    statement: AppendStatement,
    claims: readonly (ClaimChanges | undefined)[],
    context: InlineApplyContext,
  ): Promise<Appended | null | undefined> {
    const recording = new RecordingClient();
    const ahead = eventsAheadOfAppend(statement);
    try {
      for (const [projection, types] of this.inline) {
        const handled = ahead.filter((event) => types.has(event.type));
        if (handled.length) await projection.apply(handled, recording.client, context);
      }
    } catch {
      return undefined;
    }
    const claimQueries = claims.flatMap((changes) => (changes ? claimChangeQueries(changes) : []));
    const pipelined: PipelinedAppend = {
      statement,
      queries: [appendQuery(statement, true), ...claimQueries, ...recording.queries],
      claimQueries: claimQueries.length,
      claims,
    };
    if (this.groupCommit) return this.groupCommit.append(pipelined);
    return settlePipelinedAppend(pipelined, await sendInOneTransaction(this.pool, pipelined.queries));
  }

  /**
   * After a commit: this store's subscriptions look at once; every other process's are told by a
   * NOTIFY sent after the commit, never inside it. At most one every `notifyIntervalMs`: the
   * appends that commit meanwhile share the next one (a socket write per append costs more than
   * those milliseconds of latency, measured).
   */
  private announceAppend(): void {
    this.feed.wake();
    this.notifyOthers();
  }

  private notifyOthers(): void {
    if (this.notifying) {
      this.notifyAgain = true;
      return;
    }
    this.notifying = true;
    const sent = Date.now();
    this.pool
      .query({ name: 'es_notify_appended', text: 'SELECT pg_notify($1, $2)', values: [eventsChannel, ''] })
      .catch((error: unknown) => this.reportBackgroundError(error))
      .finally(() => {
        const wait = Math.max(0, sent + notifyIntervalMs - Date.now());
        setTimeout(() => {
          this.notifying = false;
          if (this.notifyAgain && !this.closed) {
            this.notifyAgain = false;
            this.notifyOthers();
          }
        }, wait).unref();
      });
  }

  async readStream(stream: string): Promise<RecordedEvent[]> {
    return readStream(this.pool, stream);
  }

  async readAll(options: {
    after?: Position;
    limit: number;
    streamPrefixes?: string[];
  }): Promise<RecordedEvent[]> {
    return (await readBatch(this.pool, options.after, options.limit, options.streamPrefixes)).events;
  }

  async headPosition(): Promise<Position | undefined> {
    return readHeadPosition(this.pool);
  }

  async claimHolder(scope: string, key: string): Promise<string | undefined> {
    return readClaimHolder(this.pool, scope, key);
  }

  subscribeAll(options: SubscriptionOptions): Subscription {
    if (this.closed) throw new Error('the event store is closed');
    const batchSize = options.batchSize ?? this.batchSize;
    assertLimit(batchSize, 'batchSize');
    const subscription = this.feed.subscribe(options, batchSize);
    this.subscriptions.add(subscription);
    void subscription.finished.then(() => this.subscriptions.delete(subscription));
    return subscription;
  }

  /** Stops every subscription (and its own LISTEN connection); the pool stays open. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    if (this.ownsNotifications) await this.notifications.close();
  }

  private reportBackgroundError(error: unknown): void {
    try {
      this.options.onBackgroundError?.(error);
    } catch {
      // A failing reporter must not break the store.
    }
  }
}
