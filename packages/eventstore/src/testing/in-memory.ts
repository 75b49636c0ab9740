import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import {
  comparePositions,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type AppendOptions,
  type AppendResult,
  type AppendSideData,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type StreamAppend,
  type Subscription,
  type SubscriptionOptions,
  type UniquenessRules,
} from '../port.ts';

export interface InMemoryEventStoreOptions {
  /** The uniqueness records each event changes, kept with the append as the real stores keep them. */
  uniqueness?: UniquenessRules;
  /** Subscription batch size when SubscriptionOptions.batchSize is absent. Default 500. */
  batchSize?: number;
  /**
   * A write-side step run inside each append, after its checks and before anything is kept: it
   * sees the events as they will be stored and the append's side data, and throwing refuses the
   * append (as an inline projection's error does in PostgreSQL).
   */
  onAppend?: (events: readonly RecordedEvent[], context: { sideData?: AppendSideData }) => void;
}

interface HeldClaim {
  scope: string;
  holder: string;
  tenant_id?: string;
}

/** JSON in, JSON out, as a store that keeps jsonb does: no shared object between writer and readers. */
const copied = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * The event store port in memory, for tests of command handlers (the `unit` tier: no database).
 * It passes the contract suite (contract.ts) as the PostgreSQL and KurrentDB adapters do:
 * expected revisions, one winner of concurrent appends, uniqueness claims, readAll and
 * subscriptions in commit order. Each append is one commit; nothing persists past the instance.
 */
export class InMemoryEventStore implements EventStore {
  private readonly log: RecordedEvent[] = [];
  private readonly streams = new Map<string, RecordedEvent[]>();
  private claims = new Map<string, HeldClaim>();
  private readonly subscriptions = new Set<InMemorySubscription>();
  /** Lets stop() called from inside onEvents return at once instead of waiting for itself. */
  private readonly delivering = new AsyncLocalStorage<InMemorySubscription>();
  private commits = 0;
  private closed = false;
  private readonly options: InMemoryEventStoreOptions;

  constructor(options: InMemoryEventStoreOptions = {}) {
    this.options = options;
  }

  /** Events given before the test: appended as they are, in order (the "given" of a spec). */
  async given(stream: string, events: NewEvent[]): Promise<AppendResult> {
    return this.append(stream, events, { expectedRevision: 'any' });
  }

  async append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult> {
    return this.appendStreams(
      [{ stream, events, expectedRevision: options.expectedRevision }],
      options.sideData ? { sideData: options.sideData } : {},
    );
  }

  /** Every stream checked before anything is kept: one commit, or nothing. */
  async appendStreams(
    appends: StreamAppend[],
    options: { sideData?: AppendSideData } = {},
  ): Promise<AppendResult> {
    if (appends.length === 0) throw new TypeError('appendStreams needs at least one stream');
    if (new Set(appends.map((one) => one.stream)).size !== appends.length) {
      throw new TypeError('appendStreams names a stream twice');
    }
    for (const { stream, events, expectedRevision } of appends) {
      if (typeof stream !== 'string' || stream.length === 0)
        throw new TypeError('stream name must not be empty');
      if (!Array.isArray(events) || events.length === 0)
        throw new TypeError('append needs at least one event');
      events.forEach((event, index) => {
        if (typeof event.type !== 'string' || event.type.length === 0) {
          throw new TypeError(`event ${index} has no type`);
        }
        if (event.data === undefined) throw new TypeError(`event ${index} has no data`);
        if (typeof event.metadata !== 'object' || event.metadata === null) {
          throw new TypeError(`event ${index} has no metadata`);
        }
      });
      if (!matches(expectedRevision, (this.streams.get(stream) ?? []).length)) {
        throw new WrongExpectedRevisionError(stream, expectedRevision);
      }
    }
    const claims = this.claimsAfter(appends.flatMap((one) => one.events));
    const commit = String(++this.commits);
    const createdAt = new Date();
    const recorded: RecordedEvent[] = [];
    for (const { stream, events } of appends) {
      const existing = this.streams.get(stream) ?? [];
      for (const [index, event] of events.entries()) {
        recorded.push({
          event_id: event.event_id ?? randomUUID(),
          type: event.type,
          data: copied(event.data),
          metadata: copied(event.metadata),
          stream,
          revision: existing.length + index,
          position: { commit, prepare: String(this.log.length + recorded.length + 1) },
          created_at: createdAt,
        });
      }
    }
    this.options.onAppend?.(recorded, options.sideData ? { sideData: options.sideData } : {});
    this.claims = claims;
    this.log.push(...recorded);
    for (const event of recorded) {
      this.streams.set(event.stream, [...(this.streams.get(event.stream) ?? []), event]);
    }
    for (const subscription of this.subscriptions) subscription.wake();
    const last = recorded.at(-1)!;
    return { revision: last.revision, position: last.position };
  }

  /** The claims as they would be after these events (releases, then claims); the held ones unchanged. */
  private claimsAfter(events: readonly NewEvent[]): Map<string, HeldClaim> {
    const claims = new Map(this.claims);
    for (const event of events) {
      const changes = this.options.uniqueness?.(event);
      if (!changes) continue;
      for (const [id, held] of claims) {
        const ofTenant = changes.releaseTenant !== undefined && held.tenant_id === changes.releaseTenant;
        const ofHolder = (changes.releaseHeldBy ?? []).some(
          (release) => release.scope === held.scope && release.holder === held.holder,
        );
        if (ofTenant || ofHolder) claims.delete(id);
      }
      for (const claim of changes.claim ?? []) {
        const id = claimId(claim.scope, claim.key);
        const held = claims.get(id);
        if (held && held.holder !== claim.holder) throw new UniqueClaimTaken(claim.scope, held.holder);
        if (!held) {
          claims.set(id, {
            scope: claim.scope,
            holder: claim.holder,
            ...(claim.tenant_id === undefined ? {} : { tenant_id: claim.tenant_id }),
          });
        }
      }
    }
    return claims;
  }

  async readStream(stream: string): Promise<RecordedEvent[]> {
    return (this.streams.get(stream) ?? []).map(copiedEvent);
  }

  async readAll(options: {
    after?: Position;
    limit: number;
    streamPrefixes?: string[];
  }): Promise<RecordedEvent[]> {
    return this.readAfter(options.after, options.limit, options.streamPrefixes).map(copiedEvent);
  }

  /** Up to `limit` events after a position, of the streams with one of the prefixes (all without). */
  readAfter(after: Position | undefined, limit: number, prefixes?: readonly string[]): RecordedEvent[] {
    const found: RecordedEvent[] = [];
    for (const event of this.log) {
      if (found.length >= limit) break;
      if (after && comparePositions(event.position, after) <= 0) continue;
      if (prefixes && !prefixes.some((prefix) => event.stream.startsWith(prefix))) continue;
      found.push(event);
    }
    return found;
  }

  async headPosition(): Promise<Position | undefined> {
    return this.log.at(-1)?.position;
  }

  subscribeAll(options: SubscriptionOptions): Subscription {
    if (this.closed) throw new Error('the event store is closed');
    const subscription = new InMemorySubscription(
      options,
      options.batchSize ?? this.options.batchSize ?? 500,
      (after, limit) => this.readAfter(after, limit, options.streamPrefixes).map(copiedEvent),
      this.delivering,
    );
    this.subscriptions.add(subscription);
    void subscription.finished.then(() => this.subscriptions.delete(subscription));
    return subscription;
  }

  async claimHolder(scope: string, key: string): Promise<string | undefined> {
    return this.claims.get(claimId(scope, key))?.holder;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
  }
}

const claimId = (scope: string, key: string) => `${scope}\u0000${key}`;

const copiedEvent = (event: RecordedEvent): RecordedEvent => ({
  ...event,
  data: copied(event.data),
  metadata: copied(event.metadata),
  position: { ...event.position },
});

/** Whether a stream of `length` events meets the expectation; a malformed one is a TypeError. */
function matches(expected: ExpectedRevision, length: number): boolean {
  if (typeof expected === 'number') {
    if (!Number.isSafeInteger(expected) || expected < 0) {
      throw new TypeError(`expected revision must be a non-negative integer, got ${expected}`);
    }
    return length === expected + 1;
  }
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return length === 0;
    case 'stream_exists':
      return length > 0;
    default:
      throw new TypeError(`unknown expected revision ${String(expected)}`);
  }
}

/** Delivers batches in commit order, one onEvents call at a time, woken by each append. */
class InMemorySubscription implements Subscription {
  readonly finished: Promise<void>;
  private stopped = false;
  private wakePending = false;
  private endWait: (() => void) | undefined;
  private readonly options: SubscriptionOptions;
  private readonly batchSize: number;
  private readonly read: (after: Position | undefined, limit: number) => RecordedEvent[];
  private readonly delivering: AsyncLocalStorage<InMemorySubscription>;

  constructor(
    options: SubscriptionOptions,
    batchSize: number,
    read: (after: Position | undefined, limit: number) => RecordedEvent[],
    delivering: AsyncLocalStorage<InMemorySubscription>,
  ) {
    this.options = options;
    this.batchSize = batchSize;
    this.read = read;
    this.delivering = delivering;
    this.finished = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    if (this.delivering.getStore() === this) return;
    await this.finished;
  }

  wake(): void {
    this.wakePending = true;
    this.endWait?.();
  }

  private wait(): Promise<void> {
    if (this.wakePending || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.endWait = () => {
        this.endWait = undefined;
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    // Delivery starts after the caller got its subscription, as with a store that reads first.
    await Promise.resolve();
    let position = this.options.after;
    while (!this.stopped) {
      this.wakePending = false;
      const batch = this.read(position, this.batchSize);
      if (batch.length === 0) {
        await this.wait();
        continue;
      }
      try {
        await this.delivering.run(this, () => this.options.onEvents(batch));
      } catch (error) {
        this.stopped = true;
        try {
          this.options.onError?.(error);
        } catch {
          // A failing reporter must not break the store.
        }
        break;
      }
      position = batch.at(-1)!.position;
    }
  }
}
