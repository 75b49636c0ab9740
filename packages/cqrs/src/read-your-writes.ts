import type { NotificationHub, Pool } from '@tokenvault/platform';
import { comparePositions, type Position } from '@tokenvault/eventstore';
import { Checkpoint } from './checkpoint.ts';
import { checkpointChannel } from './projector.ts';

interface Waiter {
  target: Position;
  resolve(caughtUp: boolean): void;
  timer: NodeJS.Timeout;
}

export const readModelLagHeader = 'x-read-model-lagging';

export interface ReadYourWritesOptions {
  /** The process's LISTEN connection: the projector's checkpoints arrive there. */
  notifications: NotificationHub;
  pool: Pool;
  projectorName: string;
  timeoutMs: number;
  /**
   * Whether appends write the read models that writes answer from in their own transaction
   * (PROJECTIONS=inline): then a write waits for nothing, and only reads of the trailing read
   * models (audit log, usage) wait for the projector.
   */
  inline: boolean;
  /** The position of the last event committed: what a read of the trailing read models waits for. */
  headPosition: () => Promise<Position | undefined>;
  pollIntervalMs?: number;
}

/**
 * Read-your-writes. With inline projections a write is readable the moment its append commits;
 * otherwise a write's response waits until the projector's checkpoint has passed the write's
 * position. Reads of the read models only the projector writes (audit log, usage) wait until it
 * has passed every event committed before the read began. The projector announces each
 * checkpoint with NOTIFY; a slow poll covers a dropped LISTEN connection.
 */
export class ReadYourWrites {
  private checkpoint: Position | undefined;
  private readonly waiters = new Set<Waiter>();
  private readonly unlisten: (() => void)[] = [];
  private pollTimer: NodeJS.Timeout | null = null;
  private readonly checkpointRow: Checkpoint;

  private readonly options: ReadYourWritesOptions;
  constructor(options: ReadYourWritesOptions) {
    this.options = options;
    this.checkpointRow = new Checkpoint(options.pool, options.projectorName);
  }

  /** Listens before its first await: a caller starting several listeners has them on one LISTEN. */
  async start(): Promise<void> {
    const { notifications } = this.options;
    this.unlisten.push(
      notifications.listen(checkpointChannel, (payload) => {
        const [name, commit, prepare] = payload.split(':');
        if (name === this.options.projectorName && commit && prepare) this.observe({ commit, prepare });
      }),
      // Notifications sent while there was no connection are lost: the checkpoint is read again.
      notifications.onConnected(() => {
        this.checkpointRow
          .read()
          .then((position) => this.observe(position))
          .catch(() => {});
      }),
    );
    await notifications.connected();
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

  close(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    for (const waiter of this.waiters) this.settle(waiter, false);
    for (const unlisten of this.unlisten) unlisten();
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

  /** Resolves true once the read models writes answer from include this write. */
  writeReadable(position: Position, timeoutMs = this.options.timeoutMs): Promise<boolean> {
    return this.options.inline ? Promise.resolve(true) : this.waitFor(position, timeoutMs);
  }

  /** Headers for a write's response: whether the read side is still catching up. */
  async afterWrite(position: Position | null): Promise<Record<string, string>> {
    if (!position) return {};
    return (await this.writeReadable(position)) ? {} : { [readModelLagHeader]: 'true' };
  }

  /**
   * For an answer that names what another write made (a deduplicated create answering an equal
   * token): waits until the read models writes answer from have every write committed so far.
   * Headers for the response, as afterWrite's.
   */
  async afterLatestWrites(): Promise<Record<string, string>> {
    return this.options.inline ? {} : this.beforeTrailingRead();
  }

  /**
   * Before a read of a read model only the projector writes (audit log, usage): waits until it
   * has passed every event committed so far, so a client sees its own earlier writes there too.
   * Headers for the response, as afterWrite's.
   */
  async beforeTrailingRead(): Promise<Record<string, string>> {
    const head = await this.options.headPosition();
    if (!head) return {};
    return (await this.waitFor(head)) ? {} : { [readModelLagHeader]: 'true' };
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
}
