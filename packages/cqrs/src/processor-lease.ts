import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Pool } from '@tokenvault/platform';

/**
 * The right to run a processor: one row of processor_leases per processor name, held by one
 * instance until it expires. The holder renews it well before then; another instance takes it
 * only once it has expired (a dead holder's, within one lease time). Times are PostgreSQL's own
 * clock, so the instances' clocks need not agree. The checkpoint's compare-and-set stays the
 * fence: a holder that stalled past its lease and wakes up cannot commit a batch over its successor's.
 */
export class ProcessorLease {
  /** Who holds it, as the row shows: the host (the container) and process, and this instance. */
  readonly holder = `${hostname()}/${process.pid}/${randomUUID()}`;

  private readonly pool: Pool;
  private readonly name: string;
  private readonly ms: number;
  constructor(pool: Pool, name: string, ms: number) {
    this.pool = pool;
    this.name = name;
    this.ms = ms;
  }

  /** Takes the lease when it is free or expired, renews it when this instance holds it: true when held. */
  async hold(): Promise<boolean> {
    const held = await this.pool.query(
      `INSERT INTO processor_leases (name, holder, expires_at)
       VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE processor_leases.holder = excluded.holder OR processor_leases.expires_at <= now()`,
      [this.name, this.holder, this.ms],
    );
    return held.rowCount === 1;
  }

  /** Lets a standby take over at once (a stop), rather than after the lease expires. */
  async release(): Promise<void> {
    await this.pool.query('DELETE FROM processor_leases WHERE name = $1 AND holder = $2', [
      this.name,
      this.holder,
    ]);
  }
}
