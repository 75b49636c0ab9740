import pg from 'pg';
import { withTransaction, type Logger, type Migration, type Pool, type PoolClient } from '@tokenvault/platform';
import { comparePositions, type EventStore, type Position, type RecordedEvent, type Subscription } from '@tokenvault/eventstore';

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
  apply(event: RecordedEvent, tx: PoolClient): Promise<void>;
}

export const checkpointChannel = 'projection_checkpoint';

/**
 * Runs projections over all events. Each batch is applied and its checkpoint stored in one
 * transaction, so a crash never applies an event twice nor skips one. The checkpoint row is
 * locked and compared with what this instance last wrote: when another instance or a rebuild
 * moved it, this instance starts again from the stored checkpoint.
 */
export class Projector {
  private subscription: Subscription | null = null;
  private position: Position | undefined;
  private readonly byType = new Map<string, Projection[]>();
  private restarting: Promise<void> | null = null;
  private stopped = true;
  private applying = false;
  private checkpointWatch: NodeJS.Timeout | null = null;

  constructor(
    private readonly options: {
      name: string;
      store: EventStore;
      /** An owner-role pool: the projector writes every tenant's rows. */
      pool: Pool;
      projections: readonly Projection[];
      logger: Logger;
      batchSize?: number;
      /** How often an idle projector checks that nobody reset or moved its checkpoint. */
      checkpointCheckIntervalMs?: number;
    },
  ) {
    for (const projection of options.projections) {
      for (const type of projection.handles) {
        this.byType.set(type, [...(this.byType.get(type) ?? []), projection]);
      }
    }
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.position = await readCheckpoint(this.options.pool, this.options.name);
    this.subscription = this.options.store.subscribeAll({
      ...(this.position ? { after: this.position } : {}),
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
    if (this.stopped) return;
    if (!(error instanceof CheckpointMovedError)) {
      this.options.logger.error({ err: error, projector: this.options.name }, 'projection failed; retrying');
    }
    const delay = error instanceof CheckpointMovedError ? 0 : 1_000;
    if (this.restarting) return;
    this.restarting = new Promise<void>((resolve) => setTimeout(resolve, delay))
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
    const stored = await readCheckpoint(this.options.pool, this.options.name);
    if (this.applying || this.restarting || this.stopped) return;
    if (!positionsEqual(stored, this.position)) this.onError(new CheckpointMovedError());
  }

  private async applyBatch(events: RecordedEvent[]): Promise<void> {
    this.applying = true;
    try {
      await this.applyInTransaction(events);
    } finally {
      this.applying = false;
    }
  }

  private async applyInTransaction(events: RecordedEvent[]): Promise<void> {
    const last = events.at(-1);
    if (!last) return;
    await withTransaction(this.options.pool, async (tx) => {
      const stored = await tx.query<{ commit: string; prepare: string }>(
        `SELECT commit_position::text AS commit, prepare_position::text AS prepare
         FROM projection_checkpoints WHERE name = $1 FOR UPDATE`,
        [this.options.name],
      );
      if (!positionsEqual(stored.rows[0], this.position)) throw new CheckpointMovedError();
      for (const event of events) {
        for (const projection of this.byType.get(event.type) ?? []) await projection.apply(event, tx);
      }
      await tx.query(
        `INSERT INTO projection_checkpoints (name, commit_position, prepare_position, updated_at)
         VALUES ($1, $2::xid8, $3, now())
         ON CONFLICT (name) DO UPDATE SET commit_position = excluded.commit_position,
           prepare_position = excluded.prepare_position, updated_at = excluded.updated_at`,
        [this.options.name, last.position.commit, last.position.prepare],
      );
      // Delivered at commit: waiters for read-your-writes learn the new checkpoint.
      await tx.query('SELECT pg_notify($1, $2)', [
        checkpointChannel,
        `${this.options.name}:${last.position.commit}:${last.position.prepare}`,
      ]);
    });
    this.position = last.position;
  }
}

function positionsEqual(a: Position | undefined, b: Position | undefined): boolean {
  return a === undefined || b === undefined ? a === b : comparePositions(a, b) === 0;
}

class CheckpointMovedError extends Error {
  constructor() {
    super('the checkpoint was moved by another projector instance or a rebuild');
  }
}

export async function readCheckpoint(pool: Pool | PoolClient, name: string): Promise<Position | undefined> {
  const result = await pool.query<{ commit: string; prepare: string }>(
    'SELECT commit_position::text AS commit, prepare_position::text AS prepare FROM projection_checkpoints WHERE name = $1',
    [name],
  );
  return result.rows[0];
}

/**
 * Empties every read model and resets the checkpoint in one transaction: a running projector
 * notices and replays from the first event.
 */
export async function resetReadModels(pool: Pool, name: string, projections: readonly Projection[]): Promise<void> {
  const tables = [...new Set(projections.flatMap((projection) => projection.tables))];
  await withTransaction(pool, async (tx) => {
    await tx.query('SELECT 1 FROM projection_checkpoints WHERE name = $1 FOR UPDATE', [name]);
    if (tables.length) await tx.query(`TRUNCATE ${tables.map((table) => pg.escapeIdentifier(table)).join(', ')}`);
    await tx.query('DELETE FROM projection_checkpoints WHERE name = $1', [name]);
  });
}
