import pg from 'pg';
import {
  withTransaction,
  type Logger,
  type Migration,
  type Pool,
  type PoolClient,
} from '@tokenvault/platform';
import {
  readCommitted,
  type EventStore,
  type Position,
  type RecordedEvent,
  type Subscription,
} from '@tokenvault/eventstore';
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

/** Events replayed per statement when a rebuild replays the inline projections. */
const rebuildBatchSize = 1_000;

/**
 * Empties every read model and builds it again from the first event, in one transaction.
 * - The inline projections' tables are emptied and replayed right here, while an EXCLUSIVE lock
 *   holds them: reads go on from the old rows until the commit, and an append waits at its own
 *   inline step, then projects its own event onto the rebuilt tables. The replay reads without the
 *   snapshot fence, under a snapshot taken after the lock: a transaction still open then is one
 *   that has not written these tables yet.
 * - The projector's tables are emptied and its checkpoint reset: a running projector notices and
 *   replays from the first event (tables before the checkpoint row: its batches lock in that order).
 */
export async function rebuildReadModels(
  pool: Pool,
  projectorName: string,
  projections: { inline: readonly Projection[]; projector: readonly Projection[] },
): Promise<void> {
  const tablesOf = (list: readonly Projection[]) =>
    [...new Set(list.flatMap((projection) => projection.tables))].map((table) => pg.escapeIdentifier(table));
  const inlineTables = tablesOf(projections.inline);
  const projectorTables = tablesOf(projections.projector);
  const inlineTypes = new Map(
    projections.inline.map((projection) => [projection, new Set(projection.handles)]),
  );
  await withTransaction(pool, async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    if (inlineTables.length) {
      await tx.query(`LOCK TABLE ${inlineTables.join(', ')} IN EXCLUSIVE MODE`);
      for (const table of inlineTables) await tx.query(`DELETE FROM ${table}`);
      let after: Position | undefined;
      for (;;) {
        const events = await readCommitted(tx, after, rebuildBatchSize);
        if (events.length === 0) break;
        for (const [projection, types] of inlineTypes) {
          const handled = events.filter((event) => types.has(event.type));
          if (handled.length) await projection.apply(handled, tx);
        }
        after = events.at(-1)!.position;
      }
    }
    if (projectorTables.length) await tx.query(`TRUNCATE ${projectorTables.join(', ')}`);
    await new Checkpoint(pool, projectorName).reset(tx);
    // Read-your-writes waiters learn at commit that the projector starts again from nothing.
    await tx.query('SELECT pg_notify($1, $2)', [checkpointChannel, `${projectorName}:0:0`]);
  });
}
