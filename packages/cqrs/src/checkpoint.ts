import type { Pool, PoolClient, Queryable } from '@tokenvault/platform';
import { comparePositions, type Position } from '@tokenvault/eventstore';

/** Before the first event: where a new subscriber starts. */
export const origin: Position = { commit: '0', prepare: '0' };

/**
 * A subscriber's place in the event log: one row of projection_checkpoints (the projector, the
 * Kafka relay and the e-mail enqueuer each keep theirs there). It moves only from where its holder
 * last put it, so of two instances only one advances it; the other learns it lost and restarts
 * from the stored position.
 */
export class Checkpoint {
  private readonly pool: Pool;
  readonly name: string;
  constructor(pool: Pool, name: string) {
    this.pool = pool;
    this.name = name;
  }

  /** The stored position; the row is created at the origin the first time. */
  async load(): Promise<Position> {
    await this.pool.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position)
       VALUES ($1, '0', 0) ON CONFLICT (name) DO NOTHING`,
      [this.name],
    );
    return (await this.read()) ?? origin;
  }

  async read(db: Queryable = this.pool): Promise<Position | undefined> {
    const result = await db.query<{ commit: string; prepare: string }>(
      'SELECT commit_position::text AS commit, prepare_position::text AS prepare FROM projection_checkpoints WHERE name = $1',
      [this.name],
    );
    return result.rows[0];
  }

  /**
   * Moves from `from` to `to` in one statement, inside the caller's transaction when `db` is one
   * (so a projection's writes and its checkpoint commit together). A notification, when given,
   * goes out in the same statement, at commit. False: someone else moved it meanwhile.
   */
  async move(
    db: Queryable,
    from: Position,
    to: Position,
    notify?: { channel: string; payload: string },
  ): Promise<boolean> {
    const moved = await db.query(
      `WITH moved AS (
         UPDATE projection_checkpoints
         SET commit_position = $4::xid8, prepare_position = $5, updated_at = now()
         WHERE name = $1 AND commit_position = $2::xid8 AND prepare_position = $3
         RETURNING name)
       SELECT ${notify ? 'pg_notify($6, $7)' : '1'} FROM moved`,
      [
        this.name,
        from.commit,
        from.prepare,
        to.commit,
        to.prepare,
        ...(notify ? [notify.channel, notify.payload] : []),
      ],
    );
    return moved.rowCount === 1;
  }

  /** Back to the origin (a rebuild), inside the caller's transaction. */
  async reset(tx: PoolClient): Promise<void> {
    await tx.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ($1, '0', 0)
       ON CONFLICT (name) DO UPDATE SET commit_position = '0', prepare_position = 0, updated_at = now()`,
      [this.name],
    );
  }

  static same(a: Position | undefined, b: Position | undefined): boolean {
    return a !== undefined && b !== undefined && comparePositions(a, b) === 0;
  }
}
