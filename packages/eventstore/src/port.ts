/**
 * The event store port. Adapters: PostgreSQL (the embedded default) and KurrentDB (EventStoreDB).
 * Every adapter passes the contract suite in contract.ts.
 */

/** Who did what, on whose behalf. Never holds sensitive data. */
export interface EventMetadata {
  tenant_id: string;
  actor_id?: string;
  actor_type?: 'application' | 'user' | 'system';
  correlation_id?: string;
  causation_id?: string;
}

export interface NewEvent<Data = unknown> {
  /** Generated when absent; lets consumers deduplicate. */
  event_id?: string;
  type: string;
  data: Data;
  metadata: EventMetadata;
}

/**
 * A place in the commit order of all events. For PostgreSQL, commit is the writing transaction's
 * id (xid8) and prepare the global position; both are decimal strings (they can exceed 2^53).
 */
export interface Position {
  commit: string;
  prepare: string;
}

export interface RecordedEvent<Data = unknown> {
  event_id: string;
  type: string;
  data: Data;
  metadata: EventMetadata;
  stream: string;
  /** 0 for a stream's first event. */
  revision: number;
  position: Position;
  created_at: Date;
}

/**
 * What every event union's members share: a type and its data. Typed write-side steps and
 * projections are generic over a union of these (`InlineProjection<E>`), and default to this one.
 */
export interface AnyEvent {
  type: string;
  data: unknown;
}

/**
 * An event of the union E as the store hands it over: each member's type and data narrowed
 * together (a switch on `type` narrows `data`), with the metadata and position of every event.
 */
export type RecordedOf<E extends AnyEvent> = RecordedEvent & E;

/**
 * `no_stream`: the stream must not exist; `stream_exists`: it must; a number: the revision of the
 * stream's last event must be exactly this; `any`: no check.
 */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

/**
 * What an append hands to its own write-side steps (inline projections, append hooks) and to
 * nothing else: never stored in an event, never published, gone when the append returns. Keyed by
 * the step that reads it (e.g. the tokens context's new token keys, `tokenKeys`).
 */
export type AppendSideData = Readonly<Record<string, unknown>>;

export interface AppendOptions {
  expectedRevision: ExpectedRevision;
  /** For this append's write-side steps only (see AppendSideData). */
  sideData?: AppendSideData;
}

export interface AppendResult {
  /** Revision of the last event appended. */
  revision: number;
  /** Position of the last event appended: a subscriber that passed it has seen the whole append. */
  position: Position;
}

export class WrongExpectedRevisionError extends Error {
  readonly stream: string;
  readonly expected: ExpectedRevision;
  constructor(stream: string, expected: ExpectedRevision) {
    super(`stream ${stream} is not at the expected revision ${String(expected)}`);
    this.stream = stream;
    this.expected = expected;
    this.name = 'WrongExpectedRevisionError';
  }
}

/** The configured event store cannot be used (EVENTSTORE_URL): one line naming it and the reason. */
export class EventStoreUnavailableError extends Error {
  constructor(reason: string) {
    super(`EVENTSTORE_URL: ${reason}`);
    this.name = 'EventStoreUnavailableError';
  }
}

/** A uniqueness record: at most one holder of a key within its scope. */
export interface UniqueClaim {
  scope: string;
  key: string;
  /** Who holds it, e.g. the id of the invitation or token. */
  holder: string;
  /** The tenant it belongs to, so that a deleted tenant's claims can go with it. */
  tenant_id?: string;
}

/** What one event claims and gives up: decided from the event alone. */
export interface ClaimChanges {
  /** Taken by the append; a key another holder has fails the whole append (UniqueClaimTaken). */
  claim?: UniqueClaim[];
  /** Every claim of the scope this holder has goes. */
  releaseHeldBy?: { scope: string; holder: string }[];
  /** Every claim of this tenant goes. */
  releaseTenant?: string;
}

/** The uniqueness records an event changes, or undefined when it changes none. */
export type UniquenessRules = (event: { type: string; data: unknown }) => ClaimChanges | undefined;

/**
 * An append claimed a key that another holder has: nothing of it was stored. The key itself is
 * not kept (it may be an e-mail address, and errors reach logs).
 */
export class UniqueClaimTaken extends Error {
  readonly scope: string;
  /** The one holding it now. */
  readonly holder: string;
  constructor(scope: string, holder: string) {
    super(`${scope} is already claimed for this key`);
    this.scope = scope;
    this.holder = holder;
    this.name = 'UniqueClaimTaken';
  }
}

export interface SubscriptionOptions {
  /** Deliver events strictly after this position; from the very first event when absent. */
  after?: Position;
  /** Only streams whose names start with one of these prefixes. */
  streamPrefixes?: string[];
  /** Largest number of events handed to one onEvents call. */
  batchSize?: number;
  /**
   * Called with each batch, in commit order, one call at a time. When it throws, the subscription
   * stops and reports the error through onError; nothing after the failed batch is delivered.
   */
  onEvents(events: RecordedEvent[]): Promise<void>;
  onError?(error: unknown): void;
}

export interface Subscription {
  /** Stops delivering; resolves once an onEvents call in progress has finished. */
  stop(): Promise<void>;
}

/** One stream's part of an append to several streams (appendStreams). */
export interface StreamAppend {
  stream: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

/**
 * An append to several streams could not be made atomic by this store (KurrentDB before 25.1,
 * or claims kept apart from the events): nothing was stored.
 */
export class MultiStreamAppendUnsupported extends Error {
  constructor(store: string) {
    super(`${store} cannot append to several streams in one commit`);
    this.name = 'MultiStreamAppendUnsupported';
  }
}

export interface EventStore {
  append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult>;
  /**
   * Appends to several distinct streams in one commit: every stream's events, their claims and
   * write-side steps are stored, or none (a wrong expected revision of any stream refuses all:
   * WrongExpectedRevisionError names the first). The result is the commit's last event.
   */
  appendStreams(appends: StreamAppend[], options?: { sideData?: AppendSideData }): Promise<AppendResult>;
  /** All events of one stream in revision order; [] when the stream does not exist. */
  readStream(stream: string): Promise<RecordedEvent[]>;
  /** Events after a position in commit order, never skipping one that commits late. */
  readAll(options: { after?: Position; limit: number; streamPrefixes?: string[] }): Promise<RecordedEvent[]>;
  /** The position of the last event committed so far: a subscriber past it has seen them all. */
  headPosition(): Promise<Position | undefined>;
  subscribeAll(options: SubscriptionOptions): Subscription;
  /** Who holds a uniqueness claim now, as committed (see ClaimChanges). */
  claimHolder(scope: string, key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

export function comparePositions(a: Position, b: Position): number {
  const commit = BigInt(a.commit) - BigInt(b.commit);
  if (commit !== 0n) return commit < 0n ? -1 : 1;
  const prepare = BigInt(a.prepare) - BigInt(b.prepare);
  return prepare === 0n ? 0 : prepare < 0n ? -1 : 1;
}
