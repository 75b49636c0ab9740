import pg from 'pg';
import { withTransaction, type Migration, type Pool, type PoolClient } from '@tokenvault/platform';
import { readCommitted, type AnyEvent, type InlineProjection, type Position } from '@tokenvault/eventstore';
import { Checkpoint } from './checkpoint.ts';
import { EventProcessor, type BatchHandler, type EventProcessorOptions } from './event-processor.ts';

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
  {
    // processor-lease.ts: which instance of each processor runs it.
    id: 'cqrs/002_processor_leases',
    sql: `
      CREATE TABLE processor_leases (
        name text PRIMARY KEY,
        holder text NOT NULL,
        expires_at timestamptz NOT NULL
      );
    `,
  },
];

/**
 * Applies events of the types it handles to the read-model tables it owns, a batch per call (so
 * a run of events can be one statement): inline in the append's transaction, or by the projector.
 * E is the union of the events it handles (`handles` lists their types): `apply` gets them typed,
 * a switch on `type` narrows each one's data. A list of projections of different unions (a
 * context's manifest, the projector's) is a `Projection[]`, of any event.
 */
export interface Projection<E extends AnyEvent = AnyEvent> extends InlineProjection<E> {
  name: string;
  /** Tables it writes; a rebuild empties them. */
  tables: readonly string[];
}

/**
 * What a read model does with TenantDeleted (TenantDeletedEvent): the deleted tenants' rows go
 * from each of these tables (each has a uuid `tenant_id`), a run of deletions at once. Call the
 * function it returns from the projection's `TenantDeleted` case with the events' data.
 */
export function onTenantDeleted(
  tables: readonly string[],
): (tx: PoolClient, deletions: readonly { tenant_id: string }[]) => Promise<void> {
  return async (tx, deletions) => {
    const tenantIds = deletions.map((deletion) => deletion.tenant_id);
    for (const table of tables) {
      await tx.query(`DELETE FROM ${pg.escapeIdentifier(table)} WHERE tenant_id = ANY($1::uuid[])`, [
        tenantIds,
      ]);
    }
  };
}

export const checkpointChannel = 'projection_checkpoint';
/** Projections announce on it that cached views derived from a read model are stale. */
export const invalidationChannel = 'read_model_invalidation';

/** Inside a projection's transaction: delivered at commit, before the checkpoint notification. */
export async function notifyInvalidation(tx: PoolClient, key: string): Promise<void> {
  await tx.query('SELECT pg_notify($1, $2)', [invalidationChannel, key]);
}

export interface ProjectorOptions extends Omit<
  EventProcessorOptions,
  'handler' | 'announceOn' | 'streamPrefixes' | 'maxBackoffMs'
> {
  projections: readonly Projection[];
}

/** Applies each batch to the projections that handle its events, in the processor's transaction. */
export function projectionHandler(projections: readonly Projection[]): BatchHandler {
  const handledTypes = projections.map((projection) => [projection, new Set(projection.handles)] as const);
  return {
    async handle(events, tx) {
      for (const [projection, types] of handledTypes) {
        const handled = events.filter((event) => types.has(event.type));
        if (handled.length) await projection.apply(handled, tx);
      }
    },
  };
}

/**
 * The processor of the read models: each batch is applied and its checkpoint stored in one
 * transaction, so a crash never applies an event twice nor skips one, and the new checkpoint is
 * announced at that commit for the writes waiting to read their own (read-your-writes).
 */
export class Projector extends EventProcessor {
  constructor(options: ProjectorOptions) {
    const { projections, ...rest } = options;
    super({ ...rest, handler: projectionHandler(projections), announceOn: checkpointChannel });
  }
}

/** Events replayed per statement when a rebuild replays the inline projections. */
const rebuildBatchSize = 1_000;

/**
 * Empties every read model and builds it again from the first event, in one transaction.
 * - The inline projections' tables are emptied and replayed right here, while an EXCLUSIVE lock
 *   holds them: reads go on from the old rows until the commit, and an append waits at its own
 *   inline step, then projects its own event onto the rebuilt tables. The replay reads without the
 *   snapshot fence, after the lock: a transaction still open then has not written these tables
 *   yet (it waits on the lock, and projects its own events after this commit), and one that
 *   commits during the replay handled nothing they hold. Read committed, not repeatable read: a
 *   projector committing meanwhile must not make the checkpoint's reset a serialization failure.
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
  const replay = projectionHandler(projections.inline);
  await withTransaction(pool, async (tx) => {
    if (inlineTables.length) {
      await tx.query(`LOCK TABLE ${inlineTables.join(', ')} IN EXCLUSIVE MODE`);
      for (const table of inlineTables) await tx.query(`DELETE FROM ${table}`);
      let after: Position | undefined;
      for (;;) {
        const events = await readCommitted(tx, after, rebuildBatchSize);
        if (events.length === 0) break;
        await replay.handle(events, tx);
        after = events.at(-1)!.position;
      }
    }
    if (projectorTables.length) await tx.query(`TRUNCATE ${projectorTables.join(', ')}`);
    await new Checkpoint(pool, projectorName).reset(tx);
    // Read-your-writes waiters learn at commit that the projector starts again from nothing.
    await tx.query('SELECT pg_notify($1, $2)', [checkpointChannel, `${projectorName}:0:0`]);
  });
}
