import pg from 'pg';
import {
  withTransaction,
  type Logger,
  type Migration,
  type Pool,
  type PoolClient,
} from '@tokenvault/platform';
import type { EventStore, Position, RecordedEvent, Subscription } from '@tokenvault/eventstore';
import { Checkpoint, origin } from './checkpoint.ts';

export const projectorMigrations: Migration[] = [
  {
    id: 'cqrs/001_projection_checkpoints',
    sql: `
      CREATE TABLE projection_checkpoints (
        name text PRIMARY KEY,
        commit_position xid8 NOT NULL,
        prepare_position bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      GRANT SELECT ON projection_checkpoints TO {{app_role}};
    `,
  },
];

/** Applies events of some types to the read-model tables it owns. */
export interface Projection {
  name: string;
  /** Tables it writes; a rebuild empties them. */
  tables: readonly string[];
  /** Event types it handles; the others never reach apply. */
  handles: readonly string[];
  /**
   * Applies the batch's events of the handled types, in commit order (one call per batch, so a
   * projection can write a run of events with one statement).
   */
  apply(events: readonly RecordedEvent[], tx: PoolClient): Promise<void>;
}

export const checkpointChannel = 'projection_checkpoint';
/** Projections announce on it that cached views derived from a read model are stale. */
export const invalidationChannel = 'read_model_invalidation';

/** Inside a projection's transaction: delivered at commit, before the checkpoint notification. */
export async function notifyInvalidation(tx: PoolClient, key: string): Promise<void> {
  await tx.query('SELECT pg_notify($1, $2)', [invalidationChannel, key]);
}

export interface ProjectorOptions {
  name: string;
  store: EventStore;
  /** An owner-role pool: the projector writes every tenant's rows. */
  pool: Pool;
  projections: readonly Projection[];
  logger: Logger;
  batchSize?: number;
  /** How often an idle projector checks that nobody reset or moved its checkpoint. */
  checkpointCheckIntervalMs?: number;
}

/**
 * Runs projections over all events. Each batch is applied and its checkpoint stored in one
 * transaction, so a crash never applies an event twice nor skips one. The checkpoint moves only
 * from the position this instance last wrote: when another instance or a rebuild moved it, the
 * batch rolls back and this instance starts again from the stored checkpoint.
 */
export class Projector {
  private subscription: Subscription | null = null;
  private position: Position = origin;
  private readonly checkpoint: Checkpoint;
  private restarting: Promise<void> | null = null;
  private stopped = true;
  private applying = false;
  private checkpointWatch: NodeJS.Timeout | null = null;
  private readonly handledTypes: ReadonlyMap<Projection, ReadonlySet<string>>;

  private readonly options: ProjectorOptions;
  constructor(options: ProjectorOptions) {
    this.options = options;
    this.checkpoint = new Checkpoint(options.pool, options.name);
    this.handledTypes = new Map(
      options.projections.map((projection) => [projection, new Set(projection.handles)]),
    );
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.position = await this.checkpoint.load();
    this.subscription = this.options.store.subscribeAll({
      after: this.position,
      batchSize: this.options.batchSize ?? 500,
      onEvents: (events) => this.applyBatch(events),
      onError: (error) => this.onError(error),
    });
    this.checkpointWatch ??= setInterval(
      () => void this.checkCheckpoint().catch(() => {}),
      this.options.checkpointCheckIntervalMs ?? 1_000,
    );
    this.checkpointWatch.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.checkpointWatch) clearInterval(this.checkpointWatch);
    this.checkpointWatch = null;
    await this.restarting;
    await this.subscription?.stop();
    this.subscription = null;
  }

  private onError(error: unknown): void {
    if (this.stopped || this.restarting) return;
    const moved = error instanceof CheckpointMovedError;
    if (!moved)
      this.options.logger.error({ err: error, projector: this.options.name }, 'projection failed; retrying');
    this.restarting = new Promise<void>((resolve) => setTimeout(resolve, moved ? 0 : 1_000))
      .then(async () => {
        if (this.stopped) return;
        await this.subscription?.stop();
        if (!this.stopped) await this.start();
      })
      .finally(() => {
        this.restarting = null;
      });
    this.restarting.catch((restartError: unknown) => this.onError(restartError));
  }

  /** A rebuild resets the checkpoint while this projector may have nothing new to apply. */
  private async checkCheckpoint(): Promise<void> {
    if (this.applying || this.restarting || this.stopped) return;
    const expected = this.position;
    const stored = await this.checkpoint.read();
    // A batch that committed meanwhile moved both: only a difference from what we had then counts.
    if (this.applying || this.restarting || this.stopped || this.position !== expected) return;
    if (!Checkpoint.same(stored, expected)) this.onError(new CheckpointMovedError());
  }

  private async applyBatch(events: RecordedEvent[]): Promise<void> {
    const last = events.at(-1);
    if (!last) return;
    this.applying = true;
    try {
      await withTransaction(this.options.pool, async (tx) => {
        for (const [projection, types] of this.handledTypes) {
          const handled = events.filter((event) => types.has(event.type));
          if (handled.length) await projection.apply(handled, tx);
        }
        // Moved only from where this instance left it; read-your-writes waiters hear of it at commit.
        const moved = await this.checkpoint.move(tx, this.position, last.position, {
          channel: checkpointChannel,
          payload: `${this.options.name}:${last.position.commit}:${last.position.prepare}`,
        });
        if (!moved) throw new CheckpointMovedError();
      });
      this.position = last.position;
    } finally {
      this.applying = false;
    }
  }
}

class CheckpointMovedError extends Error {
  constructor() {
    super('the checkpoint was moved by another projector instance or a rebuild');
  }
}

/**
 * Empties every read model and resets the checkpoint to the origin in one transaction: a running
 * projector notices and replays from the first event.
 */
export async function resetReadModels(
  pool: Pool,
  name: string,
  projections: readonly Projection[],
): Promise<void> {
  const tables = [...new Set(projections.flatMap((projection) => projection.tables))];
  await withTransaction(pool, async (tx) => {
    // Tables first, then the checkpoint row: the projector's batches lock in the same order.
    if (tables.length)
      await tx.query(`TRUNCATE ${tables.map((table) => pg.escapeIdentifier(table)).join(', ')}`);
    await new Checkpoint(pool, name).reset(tx);
    // Read-your-writes waiters learn at commit that the read models start again from nothing.
    await tx.query('SELECT pg_notify($1, $2)', [checkpointChannel, `${name}:0:0`]);
  });
}
