import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase, migrate, createPool, type Migration } from './db.ts';
import { DomainError, type DomainErrorKind } from './domain-errors.ts';
import { asProblem, type Problem } from './errors.ts';

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
 * A check for `thenThrows` (and any `expect(check(error))`): the error answers as a problem with
 * this status (a Problem, or a DomainError through problemOf) and, when a field is named, an
 * error entry for that field.
 */
export function problemWith(status: number, field?: string): (error: unknown) => boolean {
  return (error) => {
    const problem = asProblem(error);
    return (
      problem !== undefined &&
      problem.status === status &&
      (!field || Object.hasOwn(problem.errors ?? {}, field))
    );
  };
}

/**
 * A check for a decider's `thenThrows`: the error is a DomainError of this kind and, when given,
 * with this code and an error entry for this field.
 */
export function domainErrorWith(
  kind: DomainErrorKind,
  expected: { field?: string; code?: string } = {},
): (error: unknown) => boolean {
  return (error) =>
    error instanceof DomainError &&
    error.kind === kind &&
    (expected.code === undefined || error.code === expected.code) &&
    (expected.field === undefined || Object.hasOwn(error.fields ?? {}, expected.field));
}

/**
 * The problem a call's error answers with (a Problem, or a DomainError through problemOf);
 * anything else thrown is rethrown, and throwing nothing fails.
 */
export function problemThrownBy(run: () => unknown): Problem {
  try {
    run();
  } catch (error) {
    const problem = asProblem(error);
    if (problem) return problem;
    throw error;
  }
  throw new Error('expected a Problem');
}

/** The problem an async call's rejection answers with; as problemThrownBy. */
export async function problemRejectedBy(run: () => Promise<unknown>): Promise<Problem> {
  try {
    await run();
  } catch (error) {
    const problem = asProblem(error);
    if (problem) return problem;
    throw error;
  }
  throw new Error('expected a Problem');
}
