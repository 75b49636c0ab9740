import pg from 'pg';
import { serviceUnavailable } from './errors.ts';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: a pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

// int8 (bigint) values such as global positions are parsed to JavaScript bigint-safe strings by
// default; counts and revisions here stay far below 2^53, so numbers are the convenient form.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface PoolOptions {
  connectionString: string;
  max: number;
  /** When set, every connection switches to this non-owner role, so row-level security applies. */
  role?: string;
  /** Session settings applied at connection start-up, e.g. `{ synchronous_commit: 'off' }`. */
  settings?: Record<string, string | number>;
  applicationName?: string;
  /** An idle connection failed (server restart, terminated backend): the pool replaces it. */
  onIdleClientError?: (error: Error) => void;
  /** How long a caller waits for a free connection before its connect fails (default: no limit). */
  connectionTimeoutMs?: number;
}

export function createPool(options: PoolOptions): pg.Pool {
  const settings = { ...options.settings, ...(options.role ? { role: options.role } : {}) };
  for (const [name, value] of Object.entries(settings)) {
    const plain = typeof value === 'number' ? Number.isFinite(value) : /^[a-z_][a-z0-9_]*$/.test(value);
    if (!/^[a-z_][a-z0-9_]*$/.test(name) || !plain) {
      throw new Error(`the setting ${name} must be a finite number or a plain lower-case identifier`);
    }
  }
  const startupOptions = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName ?? 'tokenvault',
    ...(options.connectionTimeoutMs ? { connectionTimeoutMillis: options.connectionTimeoutMs } : {}),
    // Set at connection start-up, so no query ever runs as the owner by mistake.
    ...(startupOptions ? { options: startupOptions } : {}),
  });
  // Without a listener, an idle client's error would crash the process.
  pool.on('error', options.onIdleClientError ?? (() => {}));
  return pool;
}

export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The tenant each app-role connection is currently set to, so it is set once, not per query. */
const connectionTenant = new WeakMap<pg.PoolClient, string>();

/**
 * Runs read-model queries as one tenant: the connection's `app.tenant_id` is set to it (once per
 * connection and tenant, a round trip saved on every other read), and the row-level security
 * policies of the app role filter every table by it. The app-role pool must only be used through
 * this function, so a connection is never used with a tenant it was not set to.
 */
export async function withTenant<T>(
  pool: pg.Pool,
  tenantId: string,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  if (!uuidPattern.test(tenantId)) throw new Error('tenant id must be a uuid');
  const client = await pool.connect();
  if (connectionTenant.get(client) !== tenantId) {
    connectionTenant.delete(client);
    try {
      await client.query("SELECT set_config('app.tenant_id', $1, false)", [tenantId]);
    } catch (error) {
      client.release(true);
      throw error;
    }
    connectionTenant.set(client, tenantId);
  }
  try {
    return await work(client);
  } finally {
    client.release();
  }
}

/**
 * Runs `work` while holding a session advisory lock named by `key` (hashed to 64 bits), so that
 * check-then-write sequences on the same key, in any process, run one at a time. The lock's
 * session is a connection of `lockPool`, a small pool of its own (bounded: waiters queue for it),
 * never one of the pools the holder's work needs.
 */
export async function withAdvisoryLock<T>(
  lockPool: pg.Pool,
  key: string,
  work: () => Promise<T>,
): Promise<T> {
  const busy = () =>
    serviceUnavailable('The same change is in progress; retry shortly.', { type: 'busy', retryAfter: 1 });
  // Every session of the lock pool busy for longer than its connection timeout: the same answer.
  const client = await lockPool.connect().catch(() => {
    throw busy();
  });
  let reusable = true;
  try {
    // A bounded wait: a request queued behind a stuck holder gives up with a 503, not forever.
    await client.query("SET lock_timeout = '30s'");
    await client
      .query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key])
      .catch((error: { code?: string }) => {
        if (error.code === '55P03') throw busy();
        throw error;
      });
    try {
      return await work();
    } finally {
      // A session that cannot unlock is ended: ending it releases the lock.
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]).catch(() => {
        reusable = false;
      });
    }
  } finally {
    client.release(!reusable);
  }
}

/** Creates the database named in the URL when it does not exist yet (dev and CI convenience). */
export async function ensureDatabase(connectionString: string): Promise<void> {
  const url = new URL(connectionString);
  const name = decodeURIComponent(url.pathname.slice(1));
  const admin = new URL(connectionString);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}

export interface Migration {
  /** Unique and stable, like `tokens/001_read_model`. */
  id: string;
  sql: string;
}

/**
 * Applies the migrations not applied yet, in the given order, each in its own transaction, under
 * an advisory lock so that processes starting together do not race. `{{app_role}}` in the SQL is
 * replaced by the app role's quoted name.
 */
export async function migrate(pool: pg.Pool, migrations: Migration[], appRole: string): Promise<string[]> {
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(7212001)');
    await ensureRole(client, appRole);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await client.query<{ id: string }>('SELECT id FROM schema_migrations')).rows.map((row) => row.id),
    );
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql.replaceAll('{{app_role}}', pg.escapeIdentifier(appRole)));
        await client.query('INSERT INTO schema_migrations (id) VALUES ($1)', [migration.id]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${migration.id} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(migration.id);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(7212001)').catch(() => {});
    client.release();
  }
  return applied;
}

async function ensureRole(client: pg.PoolClient, role: string): Promise<void> {
  const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
  if (exists.rowCount === 0) {
    await client
      .query(`CREATE ROLE ${pg.escapeIdentifier(role)} NOLOGIN`)
      .catch((error: { code?: string }) => {
        if (error.code !== '42710') throw error; // created concurrently
      });
  }
  // The owner connection must be allowed to SET ROLE to it (a no-op for superusers).
  await client.query(`GRANT ${pg.escapeIdentifier(role)} TO CURRENT_USER`).catch(() => {});
}
