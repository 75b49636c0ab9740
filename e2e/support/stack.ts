import { afterAll, beforeAll } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { loadConfig, type Config } from '@tokenvault/platform';
import { allMigrations, startAllInOne, type RunningService } from '@tokenvault/runtime';
import type { Clock } from '@tokenvault/platform';
import { bootstrapTenant } from '@tokenvault/tenancy';
import { obliterateQueues } from '@tokenvault/jobs';
import { TokenvaultClient } from '@tokenvault/sdk';

export interface TestTenant {
  tenantId: string;
  ownerUserId: string;
  applicationId: string;
  apiKey: string;
  client: TokenvaultClient;
}

export interface TestStack {
  url: string;
  config: Config;
  service: RunningService;
  database: TestDatabase;
  /** Everything the service logged, for checks that sensitive data never reaches a log. */
  logs: string[];
  /** An anonymous client (no key). */
  client: TokenvaultClient;
  createTenant(name?: string): Promise<TestTenant>;
  stop(): Promise<void>;
}

/**
 * The whole service, in this process, on a database of its own, listening on a free port: the
 * tests talk to it over HTTP only, as a client would.
 */
export async function startStack(
  overrides: Record<string, string> = {},
  options: { clock?: Clock } = {},
): Promise<TestStack> {
  const database = await createTestDatabase(allMigrations);
  const logs: string[] = [];
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    PORT: '0',
    HOST: '127.0.0.1',
    MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'debug',
    // Queues of their own (test files share one Redis) and quick e-mail retries.
    QUEUE_PREFIX: `tv-test-${database.name}`,
    EMAIL_BACKOFF_MS: '200',
    // In-process: HTTP processes would fork the test runner itself (e2e/http-processes.e2e.spec.ts runs them).
    HTTP_PROCESSES: '1',
    // npm test runs the e2e tier once per projection mode.
    ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
    ...overrides,
  });
  const logSink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const service = await startAllInOne(config, {
    logDestination: logSink,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const client = new TokenvaultClient(service.url);
  let tenantCount = 0;
  return {
    url: service.url,
    config,
    service,
    database,
    logs,
    client,
    async createTenant(name = `Tenant ${++tenantCount}`) {
      const result = await bootstrapTenant(
        service.runtime.store,
        service.runtime.vault,
        { tenantName: name, ownerEmail: `owner-${randomBytes(4).toString('hex')}@example.com` },
        service.runtime.clock,
      );
      // Its key is usable once the read models have it: on a loaded machine that can take a while.
      if (!(await service.runtime.consistency.writeReadable(result.position, 60_000))) {
        throw new Error('the read models did not catch up with the new tenant within 60 s');
      }
      return {
        tenantId: result.tenant_id,
        ownerUserId: result.owner_user_id,
        applicationId: result.application_id,
        apiKey: result.api_key,
        client: client.withKey(result.api_key),
      };
    },
    async stop() {
      await service.close();
      await obliterateQueues(config).catch(() => {});
      await database.drop();
    },
  };
}

export async function eventCount(stack: TestStack): Promise<number> {
  const result = await stack.service.runtime.ownerPool.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM es_events',
  );
  return result.rows[0]?.count ?? 0;
}

/**
 * The usual set-up of a test file or block: a stack and one tenant before its tests, the stack
 * stopped after them. Read `stack` and `tenant` inside the tests (they are set by then).
 */
export function useStack(
  overrides: Record<string, string> = {},
  options: { tenantName?: string } = {},
): { readonly stack: TestStack; readonly tenant: TestTenant } {
  const env = {} as { stack: TestStack; tenant: TestTenant };
  beforeAll(async () => {
    env.stack = await startStack(overrides);
    env.tenant = await env.stack.createTenant(options.tenantName);
  });
  afterAll(async () => env.stack?.stop());
  return env;
}
