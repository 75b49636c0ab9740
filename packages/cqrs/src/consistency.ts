import pg from 'pg';
import type { Logger, Pool } from '@tokenvault/platform';
import { comparePositions, type Position } from '@tokenvault/eventstore';
import { Checkpoint } from './checkpoint.ts';
import { checkpointChannel, invalidationChannel } from './projector.ts';

interface Waiter {
  target: Position;
  resolve(caughtUp: boolean): void;
  timer: NodeJS.Timeout;
}

export const readModelLagHeader = 'x-read-model-lagging';

/** A cache key that a projection declared stale, or null: anything may be stale. */
export type InvalidationListener = (key: string | null) => void;

export interface ReadModelConsistencyOptions {
  connectionString: string;
  pool: Pool;
  projectorName: string;
  timeoutMs: number;
  logger: Logger;
  pollIntervalMs?: number;
}

/**
 * Read-your-writes: a write's response waits until the projector's checkpoint has passed the
 * write's position. The projector announces each checkpoint with NOTIFY; a slow poll covers a
 * dropped LISTEN connection. The same connection carries the projections' invalidations, which
 * a transaction sends before its checkpoint: a cache evicts before any waiter of that write wakes.
 */
export class ReadModelConsistency {
  private checkpoint: Position | undefined;
  private readonly waiters = new Set<Waiter>();
  private listener: pg.Client | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly invalidationListeners = new Set<InvalidationListener>();
  private readonly checkpointRow: Checkpoint;

  private readonly options: ReadModelConsistencyOptions;
  constructor(options: ReadModelConsistencyOptions) {
    this.options = options;
    this.checkpointRow = new Checkpoint(options.pool, options.projectorName);
  }

  async start(): Promise<void> {
    await this.listen();
    this.observe(await this.checkpointRow.read());
    this.pollTimer = setInterval(() => {
      if (this.waiters.size === 0) return;
      this.checkpointRow
        .read()
        .then((position) => this.observe(position))
        .catch(() => {});
    }, this.options.pollIntervalMs ?? 200);
    this.pollTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    for (const waiter of this.waiters) this.settle(waiter, false);
    await this.listener?.end().catch(() => {});
  }

  onInvalidation(listener: InvalidationListener): void {
    this.invalidationListeners.add(listener);
  }

  private invalidate(key: string | null): void {
    for (const listener of this.invalidationListeners) listener(key);
  }

  /** Resolves true once the read models include the write, false when the wait timed out. */
  waitFor(target: Position, timeoutMs = this.options.timeoutMs): Promise<boolean> {
    if (this.checkpoint && comparePositions(this.checkpoint, target) >= 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        target,
        resolve,
        timer: setTimeout(() => this.settle(waiter, false), timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /** Headers for a write's response: whether the read side is still catching up. */
  async afterWrite(position: Position | null): Promise<Record<string, string>> {
    if (!position) return {};
    return (await this.waitFor(position)) ? {} : { [readModelLagHeader]: 'true' };
  }

  /**
   * The projector's checkpoint only moves forward, except when a rebuild resets it: the latest
   * report is the truth, even when it is lower than the last one.
   */
  private observe(position: Position | undefined): void {
    if (!position) return;
    this.checkpoint = position;
    for (const waiter of this.waiters) {
      if (comparePositions(position, waiter.target) >= 0) this.settle(waiter, true);
    }
  }

  private settle(waiter: Waiter, caughtUp: boolean): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter);
    waiter.resolve(caughtUp);
  }

  /** Connects the LISTEN client; when it is lost later, reconnects with backoff. */
  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.connectionString });
    client.on('notification', (message) => {
      if (message.channel === invalidationChannel) {
        this.invalidate(message.payload ?? null);
        return;
      }
      const [name, commit, prepare] = (message.payload ?? '').split(':');
      if (name === this.options.projectorName && commit && prepare) this.observe({ commit, prepare });
    });
    let connected = false;
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      client.end().catch(() => {});
      if (!connected || this.closed) return;
      this.options.logger.warn({ err: error }, 'checkpoint listener lost; reconnecting');
      this.listener = null;
      this.reconnect(0);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    try {
      await client.connect();
      await client.query(`LISTEN ${checkpointChannel}; LISTEN ${invalidationChannel}`);
    } catch (error) {
      onLost();
      throw error;
    }
    connected = true;
    this.listener = client;
  }

  private reconnect(attempt: number): void {
    const delay = Math.min(100 * 2 ** attempt, 5_000);
    setTimeout(async () => {
      if (this.closed) return;
      try {
        await this.listen();
      } catch {
        this.reconnect(attempt + 1);
        return;
      }
      // Notifications sent while disconnected are lost: anything cached may be stale.
      this.invalidate(null);
      this.observe(await this.checkpointRow.read().catch(() => undefined));
    }, delay).unref();
  }
}
