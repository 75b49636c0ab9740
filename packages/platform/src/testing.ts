import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import pg from 'pg';
import request from 'supertest';
import { configSchema } from './config.ts';
import { ensureDatabase, migrate, createPool, type Migration } from './db.ts';
import { DomainError, type DomainErrorKind } from './domain-errors.ts';
import { asProblem, Problem, unauthorized } from './errors.ts';
import { createHttpApp, finishHttpApp, mountRoutes } from './http-app.ts';
import { createLogger } from './logger.ts';
import type { Principal, RouteDefinition } from './route.ts';

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
/** A local port nothing listens on (taken from the system, then given back): connections are refused at once. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
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

/**
 * Routes on the service's own express app, called in process with supertest: the gateway's shell
 * (request ids, JSON parsing, BODY_LIMIT's default), its permission check and schemas, and its
 * central handler answering every error as problem+json. Authentication is the one part given:
 * a request's SVC-API-KEY names its caller among `callers` (a missing or unknown key is the 401
 * authentication answers). The route guard (rate limits, caps, Idempotency-Key) is Redis's and
 * has specs of its own (packages/runtime/src/guards).
 */
export function routeApp(routes: RouteDefinition[], callers: Readonly<Record<string, Principal>>) {
  const logger = createLogger('silent');
  const principals = new Map(Object.entries(callers));
  const app = createHttpApp({
    logger,
    bodyLimit: configSchema.shape.BODY_LIMIT.parse(undefined),
    configure: () => {},
  });
  mountRoutes(app, routes, async (apiKey) => {
    const principal = apiKey === undefined ? undefined : principals.get(apiKey);
    if (!principal) throw unauthorized();
    return principal;
  });
  finishHttpApp(app, logger);
  return request(app);
}

export { sensitiveIn, undeclaredSensitive } from './sensitive-responses.ts';
