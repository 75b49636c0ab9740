import { AsyncLocalStorage } from 'node:async_hooks';
import {
  BACKWARDS,
  END,
  FORWARDS,
  KurrentDBClient,
  START,
  StreamNotFoundError,
  type AllStreamSubscription,
} from '@kurrent/kurrentdb-client';
import {
  comparePositions,
  EventStoreUnavailableError,
  MultiStreamAppendUnsupported,
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type Subscription,
  type SubscriptionOptions,
} from '../port.ts';
import { observeAppend } from '../append-metrics.ts';
import {
  allFilter,
  assertStreamName,
  connectionStringProblem,
  mapAppendError,
  oneLineReason,
  toEventData,
  toKurrentPosition,
  toPortPosition,
  toRecordedEvent,
  toStreamState,
} from './mapping.ts';

export interface KurrentDBEventStoreOptions {
  /** Longest wait for one call to the server. Default 10 s: shorter than the claims' repair grace. */
  deadlineMs?: number;
  /** Subscription batch size when SubscriptionOptions.batchSize is absent. Default 500. */
  batchSize?: number;
  /** A subscription that lost its server reconnects after this, doubling up to 5 s. Default 250 ms. */
  reconnectDelayMs?: number;
  onBackgroundError?: (error: unknown) => void;
}

/**
 * The KurrentDB (EventStoreDB) adapter. Events only: uniqueness claims and write-side effects need
 * PostgreSQL, so the runtime wraps it in ExternalEventStore (external/store.ts), which keeps them
 * there. Positions are the server's commit/prepare pair; `$all` reads and subscriptions leave out
 * the server's own (`$`) events.
 */
export class KurrentDBEventStore implements EventStore {
  private readonly client: KurrentDBClient;
  private readonly deadlineMs: number;
  private readonly batchSize: number;
  private readonly subscriptions = new Set<KurrentSubscription>();
  private closed = false;
  private readonly options: KurrentDBEventStoreOptions;

  constructor(client: KurrentDBClient, options: KurrentDBEventStoreOptions = {}) {
    this.client = client;
    this.options = options;
    this.deadlineMs = options.deadlineMs ?? 10_000;
    this.batchSize = options.batchSize ?? 500;
  }

  /** A store on a connection string; EventStoreUnavailableError when it cannot be used at all. */
  static fromConnectionString(url: string, options: KurrentDBEventStoreOptions = {}): KurrentDBEventStore {
    const problem = connectionStringProblem(url);
    if (problem) throw new EventStoreUnavailableError(problem);
    let client: KurrentDBClient;
    try {
      client = KurrentDBClient.connectionString(url);
    } catch (error) {
      throw new EventStoreUnavailableError(oneLineReason(error));
    }
    return new KurrentDBEventStore(client, options);
  }

  /** One read of the log's end, within the deadline: how a process learns at start that the server is there. */
  async checkReachable(deadlineMs = this.deadlineMs): Promise<void> {
    try {
      for await (const _ of this.client.readAll({
        direction: BACKWARDS,
        fromPosition: END,
        maxCount: 1,
        deadline: deadlineMs,
      })) {
        break;
      }
    } catch (error) {
      throw new EventStoreUnavailableError(`cannot read from the server: ${oneLineReason(error)}`);
    }
  }

  async append(
    stream: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision },
  ): Promise<AppendResult> {
    return observeAppend(stream, events.length, async () => {
      assertStreamName(stream);
      const data = toEventData(events);
      const streamState = toStreamState(options.expectedRevision);
      let result;
      try {
        // A retry with the same event ids is idempotent on the server: it answers with the first write.
        result = await this.client.appendToStream(stream, data, { streamState, deadline: this.deadlineMs });
      } catch (error) {
        throw mapAppendError(error, stream, options.expectedRevision);
      }
      // With throwOnAppendFailure=false in the connection string a refusal comes back as a result.
      if (!result.success) throw new WrongExpectedRevisionError(stream, options.expectedRevision);
      const revision = Number(result.nextExpectedRevision);
      if (result.position) return { revision, position: toPortPosition(result.position) };
      // Some server versions leave the position out: the last event read back has it.
      const last = (await this.readStream(stream)).at(-1);
      if (!last) throw new Error(`stream ${stream} is empty right after an append`);
      return { revision, position: last.position };
    });
  }

  /** Not yet: KurrentDB's multi-stream append needs server 25.1 (docs/event-stores.md). */
  async appendStreams(): Promise<AppendResult> {
    throw new MultiStreamAppendUnsupported('KurrentDB');
  }

  async readStream(stream: string): Promise<RecordedEvent[]> {
    assertStreamName(stream);
    const events: RecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(stream, {
        direction: FORWARDS,
        fromRevision: START,
        deadline: this.deadlineMs,
      })) {
        const event = toRecordedEvent(resolved);
        if (event) events.push(event);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async readAll(options: {
    after?: Position;
    limit: number;
    streamPrefixes?: string[];
  }): Promise<RecordedEvent[]> {
    assertLimit(options.limit, 'limit');
    const events: RecordedEvent[] = [];
    for await (const resolved of this.client.readAll({
      direction: FORWARDS,
      fromPosition: options.after ? toKurrentPosition(options.after) : START,
      // One more: a read from a position starts with the event at it, which is not "after".
      maxCount: options.limit + 1,
      filter: allFilter(options.streamPrefixes ? { streamPrefixes: options.streamPrefixes } : {}),
      deadline: this.deadlineMs,
    })) {
      const event = toRecordedEvent(resolved);
      if (!event || (options.after && comparePositions(event.position, options.after) <= 0)) continue;
      events.push(event);
      if (events.length === options.limit) break;
    }
    return events;
  }

  async headPosition(): Promise<Position | undefined> {
    for await (const resolved of this.client.readAll({
      direction: BACKWARDS,
      fromPosition: END,
      maxCount: 1,
      filter: allFilter({}),
      deadline: this.deadlineMs,
    })) {
      const event = toRecordedEvent(resolved);
      if (event) return event.position;
    }
    return undefined;
  }

  subscribeAll(options: SubscriptionOptions): Subscription {
    if (this.closed) throw new Error('the event store is closed');
    const batchSize = options.batchSize ?? this.batchSize;
    assertLimit(batchSize, 'batchSize');
    // Checked here, not in the background: a bad prefix is the caller's error.
    allFilter(options.streamPrefixes ? { streamPrefixes: options.streamPrefixes } : {});
    const subscription = new KurrentSubscription(options, {
      batchSize,
      reconnectDelayMs: this.options.reconnectDelayMs ?? 250,
      open: (after) =>
        this.client.subscribeToAll({
          fromPosition: after ? toKurrentPosition(after) : START,
          filter: allFilter(options.streamPrefixes ? { streamPrefixes: options.streamPrefixes } : {}),
        }),
      reportBackgroundError: (error) => this.reportBackgroundError(error),
    });
    this.subscriptions.add(subscription);
    void subscription.finished.then(() => this.subscriptions.delete(subscription));
    return subscription;
  }

  /** Claims live in PostgreSQL: ExternalEventStore answers this. */
  async claimHolder(): Promise<string | undefined> {
    throw new Error('KurrentDBEventStore keeps no claims: wrap it in ExternalEventStore');
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    await this.client.dispose();
  }

  private reportBackgroundError(error: unknown): void {
    try {
      this.options.onBackgroundError?.(error);
    } catch {
      // A failing reporter must not break the store.
    }
  }
}

function assertLimit(limit: number, name: string): void {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`${name} must be a positive integer`);
}

interface KurrentSubscriptionRuntime {
  batchSize: number;
  reconnectDelayMs: number;
  open(after: Position | undefined): AllStreamSubscription;
  reportBackgroundError(error: unknown): void;
}

// Lets stop() called from inside onEvents return at once instead of waiting for itself.
const delivering = new AsyncLocalStorage<KurrentSubscription>();
const maxReconnectDelayMs = 5_000;

/**
 * A catch-up subscription to `$all`, handed on in batches of what the client has buffered (at
 * most batchSize), one onEvents call at a time. A lost connection subscribes again after the last
 * delivered position; a throwing onEvents stops it and goes to onError.
 */
class KurrentSubscription implements Subscription {
  readonly finished: Promise<void>;
  private stopped = false;
  private current: AllStreamSubscription | undefined;
  private readonly options: SubscriptionOptions;
  private readonly runtime: KurrentSubscriptionRuntime;

  constructor(options: SubscriptionOptions, runtime: KurrentSubscriptionRuntime) {
    this.options = options;
    this.runtime = runtime;
    this.finished = this.run().catch((error: unknown) => runtime.reportBackgroundError(error));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.current?.unsubscribe().catch(() => {});
    if (delivering.getStore() === this) return;
    await this.finished;
  }

  private async run(): Promise<void> {
    let position = this.options.after;
    let delay = this.runtime.reconnectDelayMs;
    while (!this.stopped) {
      const subscription = this.runtime.open(position);
      this.current = subscription;
      try {
        let batch: RecordedEvent[] = [];
        for await (const resolved of subscription) {
          if (this.stopped) break;
          const event = toRecordedEvent(resolved);
          if (event && (!position || comparePositions(event.position, position) > 0)) batch.push(event);
          // Hand on what is buffered now, or a full batch.
          if (
            batch.length === 0 ||
            (batch.length < this.runtime.batchSize && subscription.readableLength > 0)
          ) {
            continue;
          }
          const delivered = batch;
          batch = [];
          try {
            await delivering.run(this, () => this.options.onEvents(delivered));
          } catch (error) {
            this.stopped = true;
            this.reportHandlerError(error);
            break;
          }
          position = delivered.at(-1)!.position;
          delay = this.runtime.reconnectDelayMs;
          if (this.stopped) break;
        }
      } catch (error) {
        if (this.stopped) break;
        this.runtime.reportBackgroundError(error);
      } finally {
        await subscription.unsubscribe().catch(() => {});
      }
      if (this.stopped) break;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, maxReconnectDelayMs);
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
