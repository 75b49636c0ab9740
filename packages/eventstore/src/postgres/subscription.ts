import { AsyncLocalStorage } from 'node:async_hooks';
import type { Position, Subscription, SubscriptionOptions } from '../port.ts';
import type { Batch } from './read.ts';

const firstFenceRetryDelayMs = 5;
const maxErrorDelayMs = 5_000;

export interface SubscriptionRuntime {
  batchSize: number;
  pollIntervalMs: number;
  fenceRetryMaxDelayMs: number;
  read(after: Position | undefined): Promise<Batch>;
  listen(wake: () => void): () => void;
  reportBackgroundError(error: unknown): void;
}

// Lets stop() called from inside onEvents return at once instead of waiting for itself.
const delivering = new AsyncLocalStorage<PostgresSubscription>();

export class PostgresSubscription implements Subscription {
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

  /** Look again now: events were appended (or may have been). */
  wake(): void {
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
          errorDelay = Math.min(errorDelay * 2, Math.max(pollIntervalMs, maxErrorDelayMs));
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
