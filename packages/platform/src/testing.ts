import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase, migrate, createPool, type Migration } from './db.ts';
import { Problem } from './errors.ts';

const serverUrl = process.env.TEST_DATABASE_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const testAppRole = 'tokenvault_app';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/**
 * A database of its own for one test file, migrated with the given migrations: tests that read
 * every event (subscriptions, rebuilds) never see another file's events.
 */
export async function createTestDatabase(migrations: Migration[]): Promise<TestDatabase> {
  const name = `tokenvault_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  const pool = createPool({ connectionString: url.toString(), max: 1 });
  try {
    await migrate(pool, migrations, testAppRole);
  } finally {
    await pool.end();
  }
  return {
    url: url.toString(),
    name,
    async drop() {
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
/** Retries an assertion until it passes or the time is up (for effects of the asynchronous read side). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

/**
 * A check for `thenThrows` (and any `expect(check(error))`): the error is a Problem with this
 * status and, when a field is named, an error entry for that field.
 */
export function problemWith(status: number, field?: string): (error: unknown) => boolean {
  return (error) =>
    error instanceof Problem &&
    error.status === status &&
    (!field || Object.hasOwn(error.errors ?? {}, field));
}

/** The Problem a call throws; anything else thrown is rethrown, and throwing nothing fails. */
export function problemOf(run: () => unknown): Problem {
  try {
    run();
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
  throw new Error('expected a Problem');
}

/** The Problem an async call rejects with; as problemOf. */
export async function problemOfAsync(run: () => Promise<unknown>): Promise<Problem> {
  try {
    await run();
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
  throw new Error('expected a Problem');
}
