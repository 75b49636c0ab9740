import {
  processorActive,
  processorBatchesTotal,
  withTransaction,
  type Logger,
  type Pool,
  type PoolClient,
} from '@tokenvault/platform';
import type { EventStore, Position, RecordedEvent, Subscription } from '@tokenvault/eventstore';
import { Checkpoint, origin } from './checkpoint.ts';
import { ProcessorLease } from './processor-lease.ts';

/** What a processor does with the events: one handler per processor. */
export interface BatchHandler {
  /** Before each (re)start: connect to what it writes to. A throw restarts it after a backoff. */
  open?(): Promise<void>;
  /** After a stop, and before a restart. */
  close?(): Promise<void>;
  /**
   * One batch of events in commit order. `tx` is the transaction the checkpoint moves in: what the
   * handler writes there commits with the checkpoint (exactly once); what it writes elsewhere (a
   * broker, a queue) must be written when it returns, and is written again when a crash comes
   * before the checkpoint's commit (at least once: the receiver drops duplicates by event id).
   */
  handle(events: readonly RecordedEvent[], tx: PoolClient): Promise<void>;
}

export interface EventProcessorOptions {
  /** The checkpoint's name: one per processor (and per deployment of it). */
  name: string;
  store: EventStore;
  /** An owner-role pool: the checkpoint, and whatever the handler writes. */
  pool: Pool;
  handler: BatchHandler;
  logger: Logger;
  /** Only streams whose names start with one of these. */
  streamPrefixes?: string[];
  /**
   * Only events of these types reach the handler. The checkpoint still moves past the others,
   * but a batch with none of them costs no transaction: its position is saved with the next
   * handled batch, or within `checkpointCheckIntervalMs` (a restart may read such events again).
   */
  eventTypes?: ReadonlySet<string>;
  batchSize?: number;
  /**
   * After a batch that was not full (the processor has caught up), wait this long before taking
   * the next one, so that what is appended meanwhile comes as one batch (one read, one
   * transaction): for a consumer that may trail the log by this much. Default 0: at once.
   */
  batchWindowMs?: number;
  /** A channel told `<name>:<commit>:<prepare>` when the checkpoint moves, at its commit. */
  announceOn?: string;
  /** How often an idle processor checks that nobody reset or moved its checkpoint. Default 1 s. */
  checkpointCheckIntervalMs?: number;
  /** Longest wait between restarts after failures (they double from 250 ms). Default 5 s. */
  maxBackoffMs?: number;
  /**
   * How long the lease on the processor's name lasts (PROCESSOR_LEASE_MS): of the instances of one
   * processor, only the holder runs it; another takes over within this time after the holder dies.
   * Renewed every third of it. Default 10 s.
   */
  leaseMs?: number;
}

const defaultLeaseMs = 10_000;

const firstBackoffMs = 250;

/**
 * The one way every asynchronous consumer of the event log runs (the projector, the Kafka relay,
 * the e-mail enqueuer): hold the lease on its name (ProcessorLease; without it, stand by), load the
 * checkpoint, subscribe after it, hand each batch to the handler and move the checkpoint in the
 * same transaction, restart with backoff after a failure, stop. The checkpoint moves only from
 * where this instance left it: when another instance or a rebuild moved it, the batch rolls back
 * and this instance starts again from the stored checkpoint, so of two instances that both think
 * they hold the lease (one stalled past it) only one advances.
 */
export class EventProcessor {
  private subscription: Subscription | null = null;
  /** Where processing is: every event up to here was handled or passed over. */
  private position: Position = origin;
  /** Where the stored checkpoint is (behind `position` while passed-over events are unsaved). */
  private savedPosition: Position = origin;
  /** The save of passed-over events in flight: the next batch waits for it (it never rejects). */
  private saving: Promise<void> = Promise.resolve();
  private readonly checkpoint: Checkpoint;
  private readonly lease: ProcessorLease;
  /** Started: it holds the lease or tries to. */
  private stopped = true;
  /** It holds the lease and processes; false while standing by. */
  private active = false;
  /** Told once, so that a standby logs it once. */
  private standingBy = false;
  private leaseTimer: NodeJS.Timeout | null = null;
  /** The take or renewal in flight: a stop waits for it before releasing. */
  private leaseTick: Promise<void> = Promise.resolve();
  private handling = false;
  private failures = 0;
  private running: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  /** A restart is under way: a failure reported meanwhile must not start a second one. */
  private restarting = false;
  private checkpointWatch: NodeJS.Timeout | null = null;
  /** Ends the batch window early (a stop). */
  private endWindow: (() => void) | null = null;
  private readonly subscribed = new Set<() => void>();

  protected readonly options: EventProcessorOptions;
  constructor(options: EventProcessorOptions) {
    this.options = options;
    this.checkpoint = new Checkpoint(options.pool, options.name);
    this.lease = new ProcessorLease(options.pool, options.name, options.leaseMs ?? defaultLeaseMs);
  }

  /** Resolves at once: taking the lease, loading, opening and catching up go on in the background. */
  start(): Promise<void> {
    if (!this.stopped) return Promise.resolve();
    this.stopped = false;
    this.standingBy = false;
    this.keepLease();
    this.checkpointWatch ??= setInterval(
      () => void this.checkCheckpoint().catch(() => {}),
      this.options.checkpointCheckIntervalMs ?? 1_000,
    );
    this.checkpointWatch.unref();
    return Promise.resolve();
  }

  /**
   * Resolves once it is subscribed, or standing by while another instance holds the lease (for
   * tests, the benchmark and start-up checks).
   */
  ready(timeoutMs = 60_000): Promise<void> {
    if (this.subscription || this.standingBy) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.subscribed.delete(done);
        reject(new Error(`the ${this.options.name} processor did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.subscribed.add(done);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    this.leaseTimer = null;
    if (this.checkpointWatch) clearInterval(this.checkpointWatch);
    this.checkpointWatch = null;
    await this.leaseTick;
    await this.standDown();
    await this.lease.release().catch(() => {});
  }

  /** Takes or renews the lease now, and again every third of it, until the stop. */
  private keepLease(): void {
    this.leaseTick = this.holdLease().finally(() => {
      if (this.stopped) return;
      this.leaseTimer = setTimeout(() => this.keepLease(), (this.options.leaseMs ?? defaultLeaseMs) / 3);
      this.leaseTimer.unref();
    });
  }

  private async holdLease(): Promise<void> {
    const processor = this.options.name;
    let held = false;
    try {
      held = await this.lease.hold();
    } catch (error) {
      // A standby retries quietly; the processor's own failures tell of a database that is down.
      if (this.active)
        this.options.logger.warn({ err: error, processor }, 'event processor lease not renewed');
    }
    if (this.stopped) return;
    if (held) {
      if (this.active) return;
      this.active = true;
      this.standingBy = false;
      processorActive.set({ processor }, 1);
      this.options.logger.info(
        { processor, holder: this.lease.holder },
        'event processor lease taken; running',
      );
      this.running = this.run().catch((error: unknown) => this.fail(error));
      return;
    }
    if (this.active) {
      this.options.logger.warn({ processor }, 'event processor lease lost; standing by');
      await this.standDown();
    }
    processorActive.set({ processor }, 0);
    if (!this.standingBy) {
      this.standingBy = true;
      this.options.logger.info(
        { processor },
        'event processor standing by: another instance holds its lease',
      );
      for (const resolve of this.subscribed) resolve();
      this.subscribed.clear();
    }
  }

  /** No more batches: after a stop, or when the lease is gone. */
  private async standDown(): Promise<void> {
    if (this.active) processorActive.set({ processor: this.options.name }, 0);
    this.active = false;
    this.endWindow?.();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.running;
    this.running = null;
    await this.halt();
    // Best effort: unsaved, they are passed over again after the next start.
    await this.saving;
    await this.savePassedOver().catch(() => {});
  }

  private async run(): Promise<void> {
    await this.options.handler.open?.();
    if (!this.active) return this.halt();
    this.position = this.savedPosition = await this.checkpoint.load();
    if (!this.active) return this.halt();
    const batchSize = this.options.batchSize ?? 500;
    this.subscription = this.options.store.subscribeAll({
      after: this.position,
      ...(this.options.streamPrefixes ? { streamPrefixes: this.options.streamPrefixes } : {}),
      batchSize,
      onEvents: async (events) => {
        await this.handle(events);
        if (events.length < batchSize) await this.batchWindow();
      },
      onError: (error) => this.fail(error),
    });
    for (const resolve of this.subscribed) resolve();
    this.subscribed.clear();
  }

  private async halt(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = null;
    await subscription?.stop();
    await this.options.handler.close?.().catch(() => {});
  }

  private async handle(events: RecordedEvent[]): Promise<void> {
    const last = events.at(-1);
    if (!last) return;
    const { eventTypes } = this.options;
    const handled = eventTypes ? events.filter((event) => eventTypes.has(event.type)) : events;
    this.handling = true;
    try {
      await this.saving;
      if (handled.length === 0) {
        this.position = last.position;
        return;
      }
      await withTransaction(this.options.pool, async (tx) => {
        await this.options.handler.handle(handled, tx);
        const channel = this.options.announceOn;
        const moved = await this.checkpoint.move(
          tx,
          this.savedPosition,
          last.position,
          channel
            ? { channel, payload: `${this.options.name}:${last.position.commit}:${last.position.prepare}` }
            : undefined,
        );
        if (!moved) throw new CheckpointMovedError(this.options.name);
      });
      this.position = this.savedPosition = last.position;
      this.failures = 0;
      processorBatchesTotal.inc({ processor: this.options.name });
    } finally {
      this.handling = false;
    }
  }

  /** Any failure: drop the subscription and the handler's connections, and start again later. */
  private fail(error: unknown): void {
    if (!this.active || this.retryTimer || this.restarting) return;
    const moved = error instanceof CheckpointMovedError;
    const delay = moved
      ? 0
      : Math.min(this.options.maxBackoffMs ?? 5_000, firstBackoffMs * 2 ** Math.min(this.failures++, 8));
    if (!moved) {
      this.options.logger.warn(
        { err: error, processor: this.options.name, retryInMs: delay },
        'event processor failed; restarting from its checkpoint',
      );
    }
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.active) return;
      this.restarting = true;
      this.running = (async () => {
        try {
          await this.halt();
          if (this.active) await this.run();
        } finally {
          this.restarting = false;
        }
      })().catch((restartError: unknown) => this.fail(restartError));
    }, delay);
  }

  private batchWindow(): Promise<void> {
    const windowMs = this.options.batchWindowMs ?? 0;
    if (windowMs <= 0 || !this.active) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endWindow?.(), windowMs);
      this.endWindow = () => {
        clearTimeout(timer);
        this.endWindow = null;
        resolve();
      };
    });
  }

  /** Saves the position of passed-over events (one statement, no transaction). */
  private savePassedOver(): Promise<void> {
    const from = this.savedPosition;
    const to = this.position;
    if (Checkpoint.same(from, to)) return Promise.resolve();
    const save = (async () => {
      if (!(await this.checkpoint.move(this.options.pool, from, to))) {
        throw new CheckpointMovedError(this.options.name);
      }
      this.savedPosition = to;
    })();
    // A failed save restarts the processor (its caller's business); the next batch only waits.
    this.saving = save.catch(() => {});
    return save;
  }

  /**
   * Saves passed-over events; and, when there are none, checks the checkpoint (a rebuild resets
   * it while this processor may have nothing new to handle).
   */
  private async checkCheckpoint(): Promise<void> {
    if (this.handling || this.retryTimer || this.restarting || !this.active || !this.subscription) return;
    if (!Checkpoint.same(this.savedPosition, this.position)) {
      await this.savePassedOver().catch((error: unknown) => this.fail(error));
      return;
    }
    const expected = this.position;
    const stored = await this.checkpoint.read();
    // A batch that committed meanwhile moved both: only a difference from what we had then counts.
    if (this.handling || this.retryTimer || this.restarting || !this.active || this.position !== expected)
      return;
    if (!Checkpoint.same(stored, expected)) this.fail(new CheckpointMovedError(this.options.name));
  }
}

class CheckpointMovedError extends Error {
  constructor(name: string) {
    super(`the ${name} checkpoint was moved by another instance or a rebuild`);
  }
}
