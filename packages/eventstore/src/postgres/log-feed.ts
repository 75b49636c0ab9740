import { AsyncLocalStorage } from 'node:async_hooks';
import { eventStoreEventsReadTotal, eventStoreLogReadsTotal } from '@tokenvault/platform';
import {
  comparePositions,
  type Position,
  type RecordedEvent,
  type Subscription,
  type SubscriptionOptions,
} from '../port.ts';
import type { Batch } from './read.ts';

const firstFenceRetryDelayMs = 5;
const maxErrorDelayMs = 5_000;
/** A subscriber this many shared reads behind leaves the shared read and reads on its own. */
const maxPendingReads = 2;
const origin: Position = { commit: '0', prepare: '0' };

export interface LogFeedRuntime {
  pollIntervalMs: number;
  fenceRetryMaxDelayMs: number;
  /** Events after `after` of streams with these prefixes (all when absent), up to `limit`. */
  read(after: Position, limit: number, streamPrefixes: readonly string[] | undefined): Promise<Batch>;
  listen(wake: () => void): () => void;
  reportBackgroundError(error: unknown): void;
}

// Lets stop() called from inside onEvents return at once instead of waiting for itself.
const delivering = new AsyncLocalStorage<FeedSubscription>();

/**
 * The event log read once for every subscriber of a process (every processor on one event store):
 * each new batch is read once, from where the feed is, and queued to every subscriber that is
 * caught up with it (its own prefixes, past its own position). A subscriber behind the feed (one
 * that starts, or restarts after a failure, from an older checkpoint) reads on its own with the
 * same batching until it has seen everything the feed has, then joins it; one that lags more than
 * `maxPendingReads` shared reads leaves it and does the same. A subscriber's failure stops only it.
 */
export class LogFeed {
  /** Every subscriber, joined or reading on its own. */
  private readonly subscribers = new Set<FeedSubscription>();
  private readonly joined = new Set<FeedSubscription>();
  /** Everything up to here was read and queued to the joined subscribers; undefined: not reading. */
  private position: Position | undefined;
  private reading = false;
  /** The prefixes of the read in flight (undefined: every stream); absent between reads. */
  private readInFlight: { prefixes: readonly string[] | undefined } | undefined;
  private wakePending = false;
  private endWait: (() => void) | undefined;
  private unlisten: (() => void) | undefined;

  private readonly runtime: LogFeedRuntime;
  constructor(runtime: LogFeedRuntime) {
    this.runtime = runtime;
  }

  subscribe(options: SubscriptionOptions, batchSize: number): FeedSubscription {
    const subscription = new FeedSubscription(this, this.runtime, options, batchSize);
    if (this.subscribers.size === 0) this.unlisten = this.runtime.listen(() => this.wake());
    this.subscribers.add(subscription);
    subscription.begin();
    return subscription;
  }

  /** Events may have been appended: the feed and every subscriber reading on its own look again. */
  wake(): void {
    this.readAgain();
    for (const subscription of this.subscribers) subscription.wake();
  }

  /** The feed reads again at once, or right after the read in flight. */
  private readAgain(): void {
    this.wakePending = true;
    this.endWait?.();
  }

  /**
   * Joins the feed when it has read nothing the subscriber has not seen (`seenThrough`): what the
   * feed reads next is then all the subscriber misses. False: it reads on its own a while longer.
   */
  join(subscription: FeedSubscription, seenThrough: Position): boolean {
    if (this.position === undefined) this.position = seenThrough;
    else if (comparePositions(this.position, seenThrough) > 0) return false;
    // A read in flight that leaves out the subscriber's streams moves the feed past events of them
    // it never read.
    if (this.readInFlight && !covers(this.readInFlight.prefixes, subscription.streamPrefixes)) return false;
    this.joined.add(subscription);
    if (!this.reading) {
      this.reading = true;
      void this.read();
    } else {
      // The feed may be waiting for the next append or poll while the subscriber misses events
      // already in the log.
      this.readAgain();
    }
    return true;
  }

  /** The subscriber reads on its own from now on (it lags, or stopped). */
  leave(subscription: FeedSubscription): void {
    this.joined.delete(subscription);
    if (this.joined.size === 0) this.wake();
  }

  remove(subscription: FeedSubscription): void {
    this.leave(subscription);
    this.subscribers.delete(subscription);
    if (this.subscribers.size === 0) {
      this.unlisten?.();
      this.unlisten = undefined;
    }
  }

  private limit(): number {
    return Math.max(...[...this.joined].map((subscription) => subscription.batchSize));
  }

  /** One prefix list covering every joined subscriber's, or undefined (every stream). */
  private prefixes(): string[] | undefined {
    const prefixes = new Set<string>();
    for (const subscription of this.joined) {
      const own = subscription.streamPrefixes;
      if (!own) return undefined;
      for (const prefix of own) prefixes.add(prefix);
    }
    return [...prefixes];
  }

  private async read(): Promise<void> {
    const { pollIntervalMs, fenceRetryMaxDelayMs } = this.runtime;
    let fenceDelay = firstFenceRetryDelayMs;
    let errorDelay = firstFenceRetryDelayMs;
    while (this.joined.size > 0) {
      this.wakePending = false;
      const limit = this.limit();
      let batch: Batch;
      try {
        batch = await this.readShared(limit);
        errorDelay = firstFenceRetryDelayMs;
      } catch (error) {
        this.runtime.reportBackgroundError(error);
        errorDelay = Math.min(errorDelay * 2, Math.max(pollIntervalMs, maxErrorDelayMs));
        await this.wait(errorDelay);
        continue;
      }
      countRead('shared', batch);
      const last = batch.events.at(-1);
      if (last) {
        this.position = last.position;
        for (const subscription of this.joined) subscription.enqueue(batch.events, limit * maxPendingReads);
      }
      if (batch.events.length === limit) continue;
      if (batch.heldBack) {
        await this.wait(fenceDelay);
        fenceDelay = Math.min(fenceDelay * 2, fenceRetryMaxDelayMs);
        continue;
      }
      fenceDelay = firstFenceRetryDelayMs;
      await this.wait(pollIntervalMs);
    }
    // Nobody to read for: the next subscriber to join starts the feed where it is.
    this.position = undefined;
    this.reading = false;
  }

  /** The next batch for the joined subscribers' streams, noting those streams while it is read. */
  private async readShared(limit: number): Promise<Batch> {
    const prefixes = this.prefixes();
    this.readInFlight = { prefixes };
    try {
      return await this.runtime.read(this.position!, limit, prefixes);
    } finally {
      this.readInFlight = undefined;
    }
  }

  private wait(ms: number): Promise<void> {
    if (this.wakePending || this.joined.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endWait?.(), ms);
      this.endWait = () => {
        clearTimeout(timer);
        this.endWait = undefined;
        resolve();
      };
    });
  }
}

/** Whether a read of `read` prefixes (undefined: every stream) sees every stream of `own`. */
function covers(read: readonly string[] | undefined, own: readonly string[] | undefined): boolean {
  if (read === undefined) return true;
  if (own === undefined) return false;
  return own.every((prefix) => read.some((readPrefix) => prefix.startsWith(readPrefix)));
}

function countRead(reader: 'shared' | 'own', batch: Batch): void {
  eventStoreLogReadsTotal.inc({ reader });
  if (batch.events.length) eventStoreEventsReadTotal.inc({ reader }, batch.events.length);
}

/** One subscriber of the feed: its batches in commit order, one onEvents call at a time. */
export class FeedSubscription implements Subscription {
  readonly finished: Promise<void>;
  readonly batchSize: number;
  readonly streamPrefixes: readonly string[] | undefined;
  /** The last event handed to onEvents (or the position it started after). */
  private delivered: Position;
  /** Queued by the feed, not yet handed to onEvents. */
  private pending: RecordedEvent[] = [];
  private joined = false;
  private stopped = false;
  private wakePending = false;
  private endWait: (() => void) | undefined;
  private startRunning!: () => void;

  private readonly feed: LogFeed;
  private readonly runtime: LogFeedRuntime;
  private readonly options: SubscriptionOptions;
  constructor(feed: LogFeed, runtime: LogFeedRuntime, options: SubscriptionOptions, batchSize: number) {
    this.feed = feed;
    this.runtime = runtime;
    this.options = options;
    this.batchSize = batchSize;
    this.streamPrefixes = options.streamPrefixes;
    this.delivered = options.after ?? origin;
    const begun = new Promise<void>((resolve) => (this.startRunning = resolve));
    this.finished = begun
      .then(() => this.run())
      .catch((error: unknown) => runtime.reportBackgroundError(error))
      .finally(() => feed.remove(this));
  }

  /** Joins the feed at once when it starts where the feed is or ahead; reads on its own otherwise. */
  begin(): void {
    this.joined = this.feed.join(this, this.delivered);
    this.startRunning();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.feed.leave(this);
    this.joined = false;
    this.wake();
    if (delivering.getStore() === this) return;
    await this.finished;
  }

  wake(): void {
    this.wakePending = true;
    this.endWait?.();
  }

  /** From the feed: the batch's events of this subscriber's streams past what it has queued. */
  enqueue(events: readonly RecordedEvent[], maxPending: number): void {
    const queued = this.pending.at(-1)?.position ?? this.delivered;
    for (const event of events) {
      if (comparePositions(event.position, queued) > 0 && this.wants(event)) this.pending.push(event);
    }
    if (this.pending.length > maxPending) {
      // Too far behind to hold its backlog in memory: it reads that backlog itself.
      this.pending = [];
      this.joined = false;
      this.feed.leave(this);
    }
    this.wake();
  }

  private wants(event: RecordedEvent): boolean {
    return !this.streamPrefixes || this.streamPrefixes.some((prefix) => event.stream.startsWith(prefix));
  }

  private async run(): Promise<void> {
    const { pollIntervalMs, fenceRetryMaxDelayMs } = this.runtime;
    let fenceDelay = firstFenceRetryDelayMs;
    let errorDelay = firstFenceRetryDelayMs;
    while (!this.stopped) {
      this.wakePending = false;
      if (this.joined) {
        const events = this.pending.splice(0, this.batchSize);
        if (events.length) await this.deliver(events);
        else await this.wait(pollIntervalMs);
        continue;
      }
      let batch: Batch;
      try {
        batch = await this.runtime.read(this.delivered, this.batchSize, this.streamPrefixes);
        errorDelay = firstFenceRetryDelayMs;
      } catch (error) {
        if (this.stopped) break;
        this.runtime.reportBackgroundError(error);
        errorDelay = Math.min(errorDelay * 2, Math.max(pollIntervalMs, maxErrorDelayMs));
        await this.wait(errorDelay);
        continue;
      }
      countRead('own', batch);
      if (this.stopped) break;
      if (batch.events.length) await this.deliver(batch.events);
      if (batch.events.length === this.batchSize) continue;
      if (!this.stopped && this.feed.join(this, batch.seenThrough)) {
        this.joined = true;
        continue;
      }
      if (batch.heldBack) {
        await this.wait(fenceDelay);
        fenceDelay = Math.min(fenceDelay * 2, fenceRetryMaxDelayMs);
        continue;
      }
      fenceDelay = firstFenceRetryDelayMs;
      await this.wait(pollIntervalMs);
    }
  }

  private async deliver(events: RecordedEvent[]): Promise<void> {
    this.delivered = events.at(-1)!.position;
    try {
      await delivering.run(this, () => this.options.onEvents(events));
    } catch (error) {
      this.stopped = true;
      this.joined = false;
      this.feed.leave(this);
      this.reportHandlerError(error);
    }
  }

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

  private reportHandlerError(error: unknown): void {
    try {
      this.options.onError?.(error);
    } catch (reportError) {
      this.runtime.reportBackgroundError(reportError);
    }
  }
}
