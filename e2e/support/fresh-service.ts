// The service as child processes on a database of their own, for the specs that kill one
// (SIGKILL: no shutdown of any kind) in the middle of a load, start another on the same database
// and compare what survived, and for the ones that start it with another configuration.
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { loadConfig } from '@tokenvault/platform';
import { obliterateQueues } from '@tokenvault/jobs';
import { allMigrations } from '@tokenvault/runtime';
import { runAdminCli, startServiceProcess, type ServiceProcess } from './service-process.ts';

export interface FreshService {
  /** What every process of it starts with (without the keyring, when the caller gave one). */
  env: NodeJS.ProcessEnv;
  databaseUrl: string;
  /** The bootstrapped tenant's id and management key. */
  tenantId: string;
  apiKey: string;
  /** A service process on the database (`env` added to the shared one); after a kill, its successor. */
  start(options?: { startTimeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<ServiceProcess>;
  /** SIGKILLs it and waits for its exit. */
  kill(service: ServiceProcess): Promise<void>;
  /** Stops the processes still running, empties the queues, drops the database. */
  close(): Promise<void>;
}

/**
 * A fresh database, migrated, with one tenant bootstrapped in it; no process yet. The processes
 * get a MASTER_KEY of their own, unless `keyring` is given: then the key variables are the caller's
 * to pass at each start (the tenant is bootstrapped under `keyring`).
 */
export async function prepareFreshService(options: {
  tenantName: string;
  env?: Record<string, string>;
  keyring?: NodeJS.ProcessEnv;
}): Promise<FreshService> {
  const database: TestDatabase = await createTestDatabase(allMigrations);
  // No broker, no keys of the caller's: the service's own. JSON lines: they are read for its URL.
  const {
    KAFKA_BROKERS: _kafka,
    MASTER_KEY: _key,
    MASTER_KEYS: _keys,
    LOG_FORMAT: _format,
    ...inherited
  } = process.env;
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...(options.keyring ? {} : { MASTER_KEY: randomBytes(32).toString('base64') }),
    QUEUE_PREFIX: `tv-test-${database.name}`,
    ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
    ...options.env,
  };
  let bootstrapped: Record<string, unknown>;
  try {
    bootstrapped = await runAdminCli(
      'bootstrap.ts',
      [
        '--tenant-name',
        options.tenantName,
        '--owner-email',
        `owner-${randomBytes(4).toString('hex')}@example.com`,
      ],
      { ...env, ...options.keyring },
    );
  } catch (error) {
    await database.drop();
    throw error;
  }
  const running = new Set<ServiceProcess>();
  return {
    env,
    databaseUrl: database.url,
    tenantId: String(bootstrapped.tenant_id),
    apiKey: String(bootstrapped.api_key),
    async start({ env: startEnv, ...startOptions } = {}) {
      const service = await startServiceProcess({ ...env, ...startEnv }, startOptions);
      running.add(service);
      return service;
    },
    async kill(service) {
      service.child.kill('SIGKILL');
      await service.stop();
      running.delete(service);
    },
    async close() {
      for (const service of running) await service.stop();
      running.clear();
      // With a keyring of the caller's, any key will do for the queues' configuration.
      const queueEnv = options.keyring ? { ...env, MASTER_KEY: randomBytes(32).toString('base64') } : env;
      await obliterateQueues(loadConfig(queueEnv)).catch(() => {});
      await database.drop();
    },
  };
}

/**
 * Keeps `loops` request loops going (each calls `request` with its number and its request's) until `killWhen` resolves, then SIGKILLs the service and waits
 * for every loop to end: a loop ends at its first error (after the kill: the process is gone).
 * Resolves with the errors that came before the kill.
 */
export async function killMidLoad(
  fresh: FreshService,
  service: ServiceProcess,
  options: {
    loops: number;
    request: (loop: number, index: number) => Promise<void>;
    killWhen: () => Promise<void>;
  },
): Promise<{ failuresBeforeKill: unknown[] }> {
  const failuresBeforeKill: unknown[] = [];
  let killed = false;
  const load = Array.from({ length: options.loops }, async (_, loop) => {
    for (let index = 0; !killed; index++) {
      try {
        await options.request(loop, index);
      } catch (error) {
        if (!killed) failuresBeforeKill.push(error);
        return;
      }
    }
  });
  try {
    await options.killWhen();
  } finally {
    killed = true;
    await fresh.kill(service);
    await Promise.all(load);
  }
  return { failuresBeforeKill };
}
