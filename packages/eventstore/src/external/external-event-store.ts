import { randomUUID } from 'node:crypto';
import { startPeriodicTask, withTransaction, type Pool, type PoolClient } from '@tokenvault/platform';
import {
  MultiStreamAppendUnsupported,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type AnyEvent,
  type AppendOptions,
  type AppendResult,
  type AppendSideData,
  type ClaimChanges,
  type EventStore,
  type NewEvent,
  type Position,
  type RecordedEvent,
  type RecordedOf,
  type Subscription,
  type SubscriptionOptions,
  type UniquenessRules,
} from '../port.ts';
import { claimReleaseQueries } from '../postgres/claims.ts';

/** An event about to be appended: its id is fixed before the append, so a repair can look for it. */
export type PendingEvent = Required<Pick<NewEvent, 'event_id' | 'type' | 'data' | 'metadata'>>;

/**
 * A write-side effect of an append to an event store outside PostgreSQL, in PostgreSQL: what the
 * PostgreSQL store does in the append's own transaction (an InlineProjection) split in the two
 * steps an external store allows. Each step runs in a PostgreSQL transaction that also records
 * the append's progress, so a crash between the steps is repaired (see ExternalEventStore):
 * - before: with the claims, before the append (e.g. write a key the events will need);
 * - after: once the events are stored (e.g. destroy a deleted tenant's keys): run exactly once,
 *   by the appender or, after a crash, by the repair;
 * - failed: the append did not happen (refused, or never came): undo what `before` wrote.
 * `context.sideData` is what the append carried for its write-side steps (AppendOptions): there in
 * the appending process, absent when a repair runs a step after a crash (it has the events only).
 */
export interface AppendHook<E extends AnyEvent = AnyEvent> {
  /** Event types it handles; only appends with one of them reach it, and only those events, members of E. */
  handles: readonly E['type'][];
  before?(events: readonly PendingOf<E>[], tx: PoolClient, context: AppendHookContext): Promise<void>;
  /** `position` of each event is the append's last event's (what the append result tells). */
  after?(events: readonly RecordedOf<E>[], tx: PoolClient, context: AppendHookContext): Promise<void>;
  failed?(events: readonly PendingOf<E>[], tx: PoolClient, context: AppendHookContext): Promise<void>;
}

/** A pending event of the union E: each member's type and data narrowed together. */
export type PendingOf<E extends AnyEvent> = PendingEvent & E;

/** What a hook learns of the append besides its events: its side data, in the appending process only. */
export interface AppendHookContext {
  sideData?: AppendSideData;
}

export interface ExternalEventStoreOptions {
  /** Where the events go: an adapter with no transaction shared with `pool`. */
  events: EventStore;
  /** The PostgreSQL of the claims and pending appends (eventStoreMigrations). */
  pool: Pool;
  uniqueness?: UniquenessRules;
  hooks?: readonly AppendHook[];
  /**
   * How long a pending append may stay unsettled before a repair settles it (a crash between the
   * claim and the append). Must exceed the longest an append can take (the adapter's deadline).
   * Default 60 s.
   */
  repairGraceMs?: number;
  /** After an append that had claims or hooks is settled, with its events (in-process caches). */
  onCommitted?: (events: readonly RecordedEvent[]) => void;
  onBackgroundError?: (error: unknown) => void;
}

/** What a repair did with one pending append. */
export type RepairOutcome = 'completed' | 'released' | 'settled-elsewhere';

interface PendingRow {
  stream: string;
  events: PendingEvent[];
}

/**
 * An event store whose events live outside PostgreSQL (KurrentDB), composed with PostgreSQL for
 * what must hold without a shared transaction: uniqueness claims and write-side effects.
 *
 * An append that claims a key or has a hook runs in three steps:
 * 1. reserve, in one PostgreSQL transaction: record the pending append (its id, stream and
 *    events), claim its keys as reserved for it (a key another holder has, reserved or settled,
 *    refuses the append: UniqueClaimTaken), run the hooks' `before`;
 * 2. append to the external store, the events' ids fixed;
 * 3. settle, in one PostgreSQL transaction: on success apply the events' claim changes as the
 *    PostgreSQL store does (releases, then claims), clear the reservation, run the hooks' `after`,
 *    forget the pending append; on a refused append (wrong expected revision) release the
 *    reservations and run the hooks' `failed`.
 * A crash (or an ambiguous failure: a timeout) between 1 and 3 leaves the pending append and its
 * reserved keys. repairStale() (run every repairGraceMs/4 by startRepairs, in every process, one
 * at a time per pending append) settles those older than the grace: it looks for the append's
 * event ids in its stream; found, it completes step 3; absent, it releases. A new claimant that
 * meets a reservation older than the grace repairs it first, then tries again.
 */
export class ExternalEventStore implements EventStore {
  private readonly events: EventStore;
  private readonly pool: Pool;
  private readonly options: ExternalEventStoreOptions;
  private readonly graceMs: number;
  private repairs: { stop(): Promise<void> } | undefined;

  constructor(options: ExternalEventStoreOptions) {
    this.options = options;
    this.events = options.events;
    this.pool = options.pool;
    this.graceMs = options.repairGraceMs ?? 60_000;
  }

  /**
   * Not yet: the claims of several streams would have to be settled together with an atomic
   * append of the event store behind it.
   */
  async appendStreams(): Promise<AppendResult> {
    throw new MultiStreamAppendUnsupported('An external event store');
  }

  async append(stream: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult> {
    if (!Array.isArray(events) || events.length === 0) throw new TypeError('append needs at least one event');
    const pending: PendingEvent[] = events.map((event) => ({
      event_id: event.event_id ?? randomUUID(),
      type: event.type,
      data: event.data,
      metadata: event.metadata,
    }));
    const tracked = pending.filter(
      (event) => this.options.uniqueness?.(event) !== undefined || this.hooksOf([event]).length > 0,
    );
    const expected = { expectedRevision: options.expectedRevision };
    // Nothing to keep in PostgreSQL: the external store alone.
    if (tracked.length === 0) return this.events.append(stream, pending, expected);

    const appendId = randomUUID();
    const context: AppendHookContext = options.sideData ? { sideData: options.sideData } : {};
    await this.reserve(appendId, stream, tracked, context);
    let result: AppendResult;
    try {
      result = await this.events.append(stream, pending, expected);
    } catch (error) {
      // Refused: nothing was stored, so nothing is held. Anything else may have been stored
      // (a timeout after the server wrote): the repair looks, after the grace.
      if (error instanceof WrongExpectedRevisionError || error instanceof TypeError) {
        await this.release(appendId, undefined, context).catch((releaseError: unknown) =>
          this.reportBackgroundError(releaseError),
        );
      }
      throw error;
    }
    const recorded = pending.map((event, index): RecordedEvent => ({
      ...event,
      stream,
      revision: result.revision - (pending.length - 1 - index),
      position: result.position,
      created_at: new Date(),
    }));
    try {
      const settled = await withTransaction(this.pool, (tx) =>
        this.complete(tx, appendId, recorded, context),
      );
      if (!settled) await this.checkSettledElsewhere(recorded);
    } catch (error) {
      // Stored already: the repair completes it; the append must not look failed.
      this.reportBackgroundError(error);
      return result;
    }
    this.announce(recorded);
    return result;
  }

  /** Step 1: the pending append, its reserved keys and the hooks' `before`, in one transaction. */
  private async reserve(
    appendId: string,
    stream: string,
    tracked: PendingEvent[],
    context: AppendHookContext,
    retried = false,
  ): Promise<void> {
    let stale: string | undefined;
    try {
      await withTransaction(this.pool, async (tx) => {
        await tx.query({
          name: 'es_pending_append',
          text: 'INSERT INTO es_pending_appends (id, stream, events) VALUES ($1, $2, $3)',
          values: [appendId, stream, JSON.stringify(tracked)],
        });
        for (const event of tracked) {
          for (const claim of this.options.uniqueness?.(event)?.claim ?? []) {
            const { rows } = await tx.query<{ holder: string; reserved_for: string | null; stale: boolean }>({
              name: 'es_reserve_claim',
              // DO UPDATE (to itself) returns a conflicting row even when it committed after this
              // statement began; `stale`: reserved by an append older than the grace.
              text: `INSERT INTO es_unique_claims AS c (scope, key, holder, tenant_id, reserved_for)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (scope, key) DO UPDATE SET holder = c.holder
                     RETURNING c.holder, c.reserved_for::text AS reserved_for,
                       COALESCE((SELECT p.reserved_at < now() - $6 * interval '1 millisecond'
                                 FROM es_pending_appends p WHERE p.id = c.reserved_for), false) AS stale`,
              values: [claim.scope, claim.key, claim.holder, claim.tenant_id ?? null, appendId, this.graceMs],
            });
            const row = rows[0]!;
            if (row.holder === claim.holder) continue;
            if (row.stale && row.reserved_for) stale = row.reserved_for;
            throw new UniqueClaimTaken(claim.scope, row.holder);
          }
        }
        for (const hook of this.hooksOf(tracked)) {
          const handled = tracked.filter((event) => hook.handles.includes(event.type));
          await hook.before?.(handled, tx, context);
        }
      });
    } catch (error) {
      // The holder is a reservation whose append never settled: repair it, then claim again once.
      if (error instanceof UniqueClaimTaken && stale && !retried) {
        await this.repair(stale);
        return this.reserve(appendId, stream, tracked, context, true);
      }
      throw error;
    }
  }

  /**
   * Step 3 after a stored append (or its repair): claim changes as the PostgreSQL store applies
   * them, the reservation cleared, the hooks' `after`. Nothing when the pending append was
   * settled by someone else already.
   */
  private async complete(
    tx: PoolClient,
    appendId: string,
    recorded: readonly RecordedEvent[],
    context: AppendHookContext = {},
  ): Promise<boolean> {
    const { rowCount } = await tx.query({
      name: 'es_settle_pending_append',
      text: 'DELETE FROM es_pending_appends WHERE id = $1',
      values: [appendId],
    });
    if (!rowCount) return false;
    for (const event of recorded) {
      const changes = this.options.uniqueness?.(event);
      if (changes) await this.applySettled(tx, changes);
    }
    await tx.query({
      name: 'es_clear_reservation',
      text: 'UPDATE es_unique_claims SET reserved_for = NULL WHERE reserved_for = $1',
      values: [appendId],
    });
    for (const hook of this.hooksOf(recorded)) {
      const handled = recorded.filter((event) => hook.handles.includes(event.type));
      await hook.after?.(handled, tx, context);
    }
    return true;
  }

  /**
   * Releases, then claims, of a stored event. Its keys were reserved before the append, so a
   * claim finds itself; one that does not (a tenant's deletion released the reservation and
   * another holder came) cannot undo the stored event: it is reported, not thrown.
   */
  private async applySettled(tx: PoolClient, changes: ClaimChanges): Promise<void> {
    for (const release of claimReleaseQueries(changes)) await tx.query(release);
    for (const claim of changes.claim ?? []) {
      const { rows } = await tx.query<{ holder: string }>({
        name: 'es_claim_settled',
        text: `INSERT INTO es_unique_claims AS c (scope, key, holder, tenant_id) VALUES ($1, $2, $3, $4)
               ON CONFLICT (scope, key) DO UPDATE SET holder = c.holder RETURNING c.holder`,
        values: [claim.scope, claim.key, claim.holder, claim.tenant_id ?? null],
      });
      if (rows[0]?.holder !== claim.holder) {
        this.reportBackgroundError(new UniqueClaimTaken(claim.scope, rows[0]?.holder ?? 'unknown'));
      }
    }
  }

  /**
   * The repair settled this append first (it outlived the grace): completed, its claims are held;
   * released while the append was still on its way, they are not, which is reported.
   */
  private async checkSettledElsewhere(recorded: readonly RecordedEvent[]): Promise<void> {
    for (const event of recorded) {
      for (const claim of this.options.uniqueness?.(event)?.claim ?? []) {
        const holder = await this.claimHolder(claim.scope, claim.key);
        if (holder !== claim.holder) {
          this.reportBackgroundError(
            new Error(
              `an append to ${event.stream} outlived the repair grace and lost its ${claim.scope} claim: raise repairGraceMs above the append deadline`,
            ),
          );
        }
      }
    }
  }

  /** Step 3 after a refused append (or a repair that found no event): the reservation goes. */
  private async release(
    appendId: string,
    db?: PoolClient,
    context: AppendHookContext = {},
  ): Promise<boolean> {
    const run = async (tx: PoolClient) => {
      const { rows } = await tx.query<{ events: PendingEvent[] }>({
        name: 'es_release_pending_append',
        text: 'DELETE FROM es_pending_appends WHERE id = $1 RETURNING events',
        values: [appendId],
      });
      if (!rows[0]) return false;
      await tx.query({
        name: 'es_release_reservation',
        text: 'DELETE FROM es_unique_claims WHERE reserved_for = $1',
        values: [appendId],
      });
      const events = rows[0].events;
      for (const hook of this.hooksOf(events)) {
        const handled = events.filter((event) => hook.handles.includes(event.type));
        await hook.failed?.(handled, tx, context);
      }
      return true;
    };
    return db ? run(db) : withTransaction(this.pool, run);
  }

  /**
   * Settles one pending append, whatever became of it: its events in the store complete it, none
   * releases it. Locks it meanwhile, so an appender's own step 3 waits and then finds it settled.
   */
  async repair(appendId: string): Promise<RepairOutcome> {
    let completed: RecordedEvent[] | undefined;
    const outcome = await withTransaction(this.pool, async (tx): Promise<RepairOutcome> => {
      const { rows } = await tx.query<PendingRow>({
        name: 'es_lock_pending_append',
        text: 'SELECT stream, events FROM es_pending_appends WHERE id = $1 FOR UPDATE SKIP LOCKED',
        values: [appendId],
      });
      const pending = rows[0];
      if (!pending) return 'settled-elsewhere';
      const ids = new Set(pending.events.map((event) => event.event_id));
      const stored = (await this.events.readStream(pending.stream)).filter((event) =>
        ids.has(event.event_id),
      );
      if (stored.length > 0) {
        await this.complete(tx, appendId, stored);
        completed = stored;
        return 'completed';
      }
      await this.release(appendId, tx);
      return 'released';
    });
    if (completed) this.announce(completed);
    return outcome;
  }

  /** Repairs every pending append older than the grace; what became of each. */
  async repairStale(graceMs = this.graceMs): Promise<RepairOutcome[]> {
    const { rows } = await this.pool.query<{ id: string }>({
      name: 'es_stale_pending_appends',
      text: `SELECT id::text AS id FROM es_pending_appends
             WHERE reserved_at < now() - $1 * interval '1 millisecond' ORDER BY reserved_at LIMIT 100`,
      values: [graceMs],
    });
    const outcomes: RepairOutcome[] = [];
    for (const row of rows) outcomes.push(await this.repair(row.id));
    return outcomes;
  }

  /** Runs repairStale every quarter of the grace until close(). */
  startRepairs(intervalMs = Math.max(1_000, Math.floor(this.graceMs / 4))): void {
    this.repairs ??= startPeriodicTask({
      run: async () => {
        await this.repairStale();
      },
      intervalMs,
      onError: (error) => this.reportBackgroundError(error),
    });
  }

  readStream(stream: string): Promise<RecordedEvent[]> {
    return this.events.readStream(stream);
  }

  readAll(options: { after?: Position; limit: number; streamPrefixes?: string[] }): Promise<RecordedEvent[]> {
    return this.events.readAll(options);
  }

  headPosition(): Promise<Position | undefined> {
    return this.events.headPosition();
  }

  subscribeAll(options: SubscriptionOptions): Subscription {
    return this.events.subscribeAll(options);
  }

  /** The holder of a settled claim: a reservation whose append is still pending holds no key yet. */
  async claimHolder(scope: string, key: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ holder: string }>({
      name: 'es_settled_claim_holder',
      text: 'SELECT holder FROM es_unique_claims WHERE scope = $1 AND key = $2 AND reserved_for IS NULL',
      values: [scope, key],
    });
    return rows[0]?.holder;
  }

  /** Stops the repairs and closes the external store; the pool stays open. */
  async close(): Promise<void> {
    await this.repairs?.stop();
    this.repairs = undefined;
    await this.events.close();
  }

  private hooksOf(events: readonly { type: string }[]): AppendHook[] {
    return (this.options.hooks ?? []).filter((hook) =>
      events.some((event) => hook.handles.includes(event.type)),
    );
  }

  private announce(events: readonly RecordedEvent[]): void {
    try {
      this.options.onCommitted?.(events);
    } catch (error) {
      this.reportBackgroundError(error);
    }
  }

  private reportBackgroundError(error: unknown): void {
    try {
      this.options.onBackgroundError?.(error);
    } catch {
      // A failing reporter must not break the store.
    }
  }
}

/** An InlineProjection-shaped write-side effect (tenant key shredding) as an `after` hook. */
export function afterAppendHook<E extends AnyEvent>(effect: {
  handles: readonly E['type'][];
  apply(events: readonly RecordedOf<E>[], tx: PoolClient): Promise<void>;
}): AppendHook<E> {
  return { handles: effect.handles, after: (events, tx) => effect.apply(events, tx) };
}
