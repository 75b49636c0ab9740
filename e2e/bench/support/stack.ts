// The system under test, on two fresh databases: the service (services/all-in-one) with a
// bootstrapped tenant, and the bare express + pg baseline (baseline-server.ts) beside it.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createDatabase, databaseUrl } from './databases.ts';
import { log } from './log.ts';
import { localPostmasterPid } from './postgres-server.ts';
import { freePort, runToCompletion, startTsChild, stopChild, waitForHttp, type Child } from './processes.ts';
import { statementsTracked, type CostProbe } from './request-cost.ts';
import { inspectOptions, registerProfiled } from './cpu-profile.ts';
import { settings } from './settings.ts';

/**
 * How many processes serve the service's HTTP (HTTP_PROCESSES, pinned: its default follows the
 * machine's cores). The baseline runs as many (baseline-server.ts, BASELINE_PROCESSES), so that
 * neither gets more cores. A scenario that asks for another count sets HTTP_PROCESSES itself.
 */
export const serviceProcesses = 1;

export interface Stack {
  /** Random, shared by this run's database names (and its Kafka topics). */
  runId: string;
  /** The environment the service runs with; the relay and the CLI get the same. */
  serviceEnv: Readonly<Record<string, string>>;
  /** The service's MASTER_KEY, for data sealed by the bench itself. */
  masterKey: string;
  service: Child;
  serviceUrl: string;
  /** The service's PROJECTIONS mode (the environment's, inline by default). */
  projections: 'inline' | 'async';
  baseline: Child;
  baselineUrl: string;
  serviceDatabase: string;
  bareDatabase: string;
  serviceDatabaseUrl: string;
  /** The bare database (the baseline's, also the event-store appends'). */
  bareDatabaseUrl: string;
  tenantId: string;
  /** The tenant's OWNER (a user): the session scenario signs in as them. */
  ownerUserId: string;
  apiKey: string;
  /** The header that authenticates as the tenant's all-permission key. */
  auth: Record<string, string>;
  /** One connection to the service's database, for seeding and checks. */
  servicePool: pg.Pool;
  /** One connection to the bare database, and one to the server's `postgres` database (cluster-wide views). */
  barePool: pg.Pool;
  adminPool: pg.Pool;
  /** PostgreSQL's postmaster when the server runs on this machine (request-cost.ts). */
  postmasterPid: number | undefined;
  statementsTracked: boolean;
  /** Ends the pools (the processes and databases go in lifecycle.ts's clean-up). */
  close(): Promise<void>;
}

export async function startStack(): Promise<Stack> {
  const runId = randomBytes(4).toString('hex');
  const serviceDb = `tokenvault_bench_${runId}`;
  const bareDb = `tokenvault_bench_${runId}_bare`;
  await createDatabase(serviceDb);
  await createDatabase(bareDb);

  const serviceEnv = {
    HOST: '127.0.0.1',
    HTTP_PROCESSES: String(serviceProcesses),
    DATABASE_URL: databaseUrl(serviceDb),
    MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    DATABASE_POOL_SIZE: String(settings.poolSize),
    NODE_ENV: 'production',
    // The limiter still runs (its Redis round trip is part of what is measured) but never refuses.
    RATE_LIMIT_PER_MINUTE: '10000000',
    REACTOR_MAX_CONCURRENT_PER_TENANT: '10000',
    // Its own queues and Redis keys: another service on this Redis must not take its reactor runs.
    QUEUE_PREFIX: `tokenvault-bench-${runId}`,
    // The proxy scenario's destination listens on loopback.
    PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
    // The webhooks scenario's receiver listens on loopback.
    WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
  };
  log(`the service's database: ${serviceDb}`);
  const { service, serviceUrl } = await startService('service', serviceEnv);

  // The same Node binary as the service (process.execPath), and as many serving processes.
  const baselinePort = await freePort();
  const baselineInspectPort = await freePort();
  const baseline = startTsChild(
    'baseline',
    'e2e/bench/support/baseline-server.ts',
    {
      HOST: '127.0.0.1',
      PORT: String(baselinePort),
      DATABASE_URL: databaseUrl(bareDb),
      DATABASE_POOL_SIZE: String(settings.poolSize),
      BASELINE_PROCESSES: String(serviceProcesses),
    },
    inspectOptions(baselineInspectPort),
  );
  const baselineUrl = `http://127.0.0.1:${baselinePort}`;
  registerProfiled(baselineUrl, 'the baseline', baselineInspectPort);

  await Promise.all([
    waitForHttp(`${serviceUrl}/readyz`, service),
    waitForHttp(`${baselineUrl}/healthz`, baseline),
  ]);
  const { apiKey, tenantId, ownerUserId } = await bootstrapTenant(serviceEnv);
  const servicePool = poolOf(serviceDb);
  const barePool = poolOf(bareDb);
  // Reads pg_stat_database from 'postgres', so its own queries are not counted for the others.
  const statsPool = poolOf('postgres');
  return {
    runId,
    serviceEnv,
    masterKey: serviceEnv.MASTER_KEY,
    service,
    serviceUrl,
    projections: process.env.PROJECTIONS === 'async' ? 'async' : 'inline',
    baseline,
    baselineUrl,
    serviceDatabase: serviceDb,
    bareDatabase: bareDb,
    serviceDatabaseUrl: databaseUrl(serviceDb),
    bareDatabaseUrl: databaseUrl(bareDb),
    tenantId,
    ownerUserId,
    apiKey,
    auth: { 'svc-api-key': apiKey },
    servicePool,
    barePool,
    adminPool: statsPool,
    postmasterPid: await localPostmasterPid(statsPool),
    statementsTracked: await statementsTracked(statsPool),
    async close() {
      await Promise.all([servicePool, barePool, statsPool].map((pool) => pool.end().catch(() => {})));
    },
  };
}

// The bench's own statements stay out of pg_stat_statements (request-cost.ts reads it per request).
const poolOf = (database: string) =>
  new pg.Pool({
    connectionString: databaseUrl(database),
    max: 1,
    application_name: 'bench-observer',
    options: '-c pg_stat_statements.track=none',
  });

/** A tenant with its OWNER and an all-permission key, through the bootstrap CLI. */
async function bootstrapTenant(
  serviceEnv: Readonly<Record<string, string>>,
): Promise<{ apiKey: string; tenantId: string; ownerUserId: string }> {
  log('bootstrapping a tenant');
  const bootstrapOutput = await runToCompletion(
    'bootstrap',
    'services/admin-cli/src/bootstrap.ts',
    ['--tenant-name', 'Bench', '--owner-email', 'bench@example.test'],
    serviceEnv,
  );
  const {
    api_key: apiKey,
    tenant_id: tenantId,
    owner_user_id: ownerUserId,
  } = JSON.parse(bootstrapOutput.trim().split('\n').at(-1) ?? '{}') as {
    api_key?: string;
    tenant_id?: string;
    owner_user_id?: string;
  };
  if (!apiKey || !tenantId || !ownerUserId)
    throw new Error(`bootstrap printed no api_key: ${bootstrapOutput}`);
  return { apiKey, tenantId, ownerUserId };
}

/**
 * Another service beside the stack's, on a fresh database of its own (`<service database>_<suffix>`)
 * with a tenant of its own, started with `env` over the stack's environment: a stack that differs
 * in its service only, and `stop`, which stops that service and ends its pool.
 */
export async function startServiceOnFreshDatabase(
  stack: Stack,
  suffix: string,
  env: Readonly<Record<string, string>> & { PROJECTIONS: 'inline' | 'async' },
): Promise<{ stack: Stack; stop(): Promise<void> }> {
  const database = `${stack.serviceDatabase}_${suffix}`;
  await createDatabase(database);
  const serviceEnv = { ...stack.serviceEnv, ...env, DATABASE_URL: databaseUrl(database) };
  const { service, serviceUrl } = await startService(`service-${suffix}`, serviceEnv);
  const servicePool = poolOf(database);
  const stop = async () => {
    await stopChild(service);
    await servicePool.end().catch(() => {});
  };
  try {
    // Its migrations run on an empty database while the first service is up: slower on a busy machine.
    await waitForHttp(`${serviceUrl}/readyz`, service, 180_000);
    const { apiKey, tenantId, ownerUserId } = await bootstrapTenant(serviceEnv);
    const started: Stack = {
      ...stack,
      serviceEnv,
      service,
      serviceUrl,
      projections: env.PROJECTIONS,
      serviceDatabase: database,
      serviceDatabaseUrl: databaseUrl(database),
      tenantId,
      ownerUserId,
      apiKey,
      auth: { 'svc-api-key': apiKey },
      servicePool,
    };
    return { stack: started, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The service's costs per request, beside the baseline row named `baseline` when there is one. */
export function serviceCost(stack: Stack, baseline?: string): CostProbe {
  return {
    servicePid: pidOf(stack.service),
    postmasterPid: stack.postmasterPid,
    database: stack.serviceDatabase,
    databasePool: stack.servicePool,
    adminPool: stack.adminPool,
    statementsTracked: stack.statementsTracked,
    projections: stack.projections,
    ...(baseline ? { baseline } : {}),
  };
}

/** The bare baseline's costs per request. */
export function baselineCost(stack: Stack): CostProbe {
  return {
    servicePid: pidOf(stack.baseline),
    postmasterPid: stack.postmasterPid,
    database: stack.bareDatabase,
    databasePool: stack.barePool,
    adminPool: stack.adminPool,
    statementsTracked: stack.statementsTracked,
  };
}

function pidOf(child: Child): number {
  if (child.process.pid === undefined) throw new Error(`${child.name} has no process id`);
  return child.process.pid;
}

/**
 * Starts the service (services/all-in-one) with `env` on a free port, registered for CPU profiles
 * (BENCH_CPU_PROFILE_DIR); the caller waits for its /readyz.
 */
export async function startService(
  name: string,
  env: Readonly<Record<string, string>>,
): Promise<{ service: Child; serviceUrl: string }> {
  const port = await freePort();
  const inspectPort = await freePort();
  log(`starting ${name} on 127.0.0.1:${port}`);
  const service = startTsChild(
    name,
    'services/all-in-one/src/main.ts',
    { ...env, PORT: String(port) },
    inspectOptions(inspectPort),
  );
  const serviceUrl = `http://127.0.0.1:${port}`;
  registerProfiled(serviceUrl, 'the service', inspectPort);
  return { service, serviceUrl };
}

/** Waits until the service's projector has applied every event so far. */
export async function waitForProjector(servicePool: pg.Pool, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await servicePool.query<{ behind: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM es_events e, projection_checkpoints c
         WHERE c.name = 'read-models' AND (e.transaction_id, e.global_position) > (c.commit_position, c.prepare_position)
       ) AS behind`,
    );
    if (rows[0]?.behind === false) return;
    await sleep(100);
  }
  throw new Error('the projector did not catch up within 15 s');
}
