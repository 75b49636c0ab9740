// `npm run bench`: throughput and latency of the service against a bare express + pg baseline,
// event-store append rate, and projection lag. Everything runs on this machine (127.0.0.1 only),
// on fresh databases that are dropped at the end. See docs/performance.md for the method.
//
// Knobs (env): BENCH_DURATION_S (10), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (16),
// BENCH_APPENDERS (16), DATABASE_POOL_SIZE (10), BENCH_POSTGRES_URL (postgres://postgres@127.0.0.1:5432),
// BENCH_CPU_PROFILE_DIR (unset: when set, the service runs with --cpu-prof and writes its profile there),
// BENCH_KAFKA (1: start a Kafka broker with infra/kafka and measure the relay; 0 skips it),
// BENCH_READ_MODELS (1: the read models at size, 10,000 children, 1,000,000 log rows and 1,000,000 tokens; 0 skips them).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { logPaths, seedChildren, seedLogs } from './read-models.ts';
import { measureSandboxOnly, seedReactors } from './reactors.ts';
import { seedTokenList, tokenListCount } from './token-list.ts';
import pg from 'pg';
import { readModelLagHeader } from '@tokenvault/cqrs';
import {
  PostgresEventStore,
  comparePositions,
  eventStoreMigrations,
  type Position,
} from '@tokenvault/eventstore';
import { createPool, migrate } from '@tokenvault/platform';
import type { CheckpointObservation } from './lag-listener.ts';
import type { KafkaObservation } from './kafka-listener.ts';
import { brokerDir, startBroker, stopBroker } from '../../infra/kafka/kafka.mjs';

const settings = {
  durationS: positiveInt('BENCH_DURATION_S', 10),
  warmupS: positiveInt('BENCH_WARMUP_S', 2),
  connections: positiveInt('BENCH_CONNECTIONS', 16),
  appenders: positiveInt('BENCH_APPENDERS', 16),
  poolSize: positiveInt('DATABASE_POOL_SIZE', 10),
  postgresUrl: process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432',
  cpuProfileDir: process.env.BENCH_CPU_PROFILE_DIR,
  kafka: process.env.BENCH_KAFKA !== '0',
  readModels: process.env.BENCH_READ_MODELS !== '0',
};
// The whole run must stay bounded even if something hangs.
const overallTimeoutMs = 10 * 60_000;

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const benchDir = fileURLToPath(new URL('.', import.meta.url));
const tokenBody = JSON.stringify({
  type: 'token',
  data: { name: 'Ada Lovelace', email: 'ada@example.test' },
});

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`${name} must be a positive integer, got ${raw}`);
  return value;
}

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// Databases

function databaseUrl(name: string): string {
  const url = new URL(settings.postgresUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: databaseUrl('postgres'),
    application_name: 'bench-admin',
  });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function createDatabase(name: string): Promise<void> {
  await withAdmin((client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
}

async function dropDatabase(name: string): Promise<void> {
  // FORCE: a child killed mid-query may leave a backend behind for a moment.
  await withAdmin((client) =>
    client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  );
}

// ---------------------------------------------------------------------------------------------
// Child processes

interface Child {
  name: string;
  process: ChildProcess;
  /** The last few KB of its stdout and stderr, for error reports. */
  output(): string;
}

const children = new Set<Child>();

function track(name: string, child: ChildProcess): Child {
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const tracked: Child = { name, process: child, output: () => tail };
  children.add(tracked);
  child.on('exit', () => children.delete(tracked));
  return tracked;
}

function startTsChild(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  nodeOptions: string[] = [],
): Child {
  const child = spawn(process.execPath, [...nodeOptions, script], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return track(name, child);
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

async function stopChild(child: Child): Promise<void> {
  if (exited(child.process)) return;
  const exit = once(child.process, 'exit');
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exit;
  clearTimeout(timer);
}

// Last resort: the bench process is exiting (even on an uncaught error), so take the children along.
process.on('exit', () => {
  for (const child of children) child.process.kill('SIGKILL');
  // The broker is detached (it outlives a normal child): take it along too.
  try {
    if (kafkaBroker) process.kill(kafkaBroker.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
});

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function waitForHttp(url: string, child: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited(child.process))
      throw new Error(`${child.name} exited before it was ready:\n${child.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }
  throw new Error(`${child.name} not ready at ${url} after ${timeoutMs} ms:\n${child.output()}`);
}

async function runToCompletion(
  name: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tracked = track(name, child);
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${name} failed (exit ${code}):\n${tracked.output()}`);
  return stdout;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// Measurements

interface Row {
  scenario: string;
  /** Requests (or appends) per second; null for rows that are not a rate. */
  rate: number | null;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx responses (HTTP) or failed appends; must be 0. */
  failures: number;
  /** Connection errors and timeouts. */
  errors: number;
  note: string;
}

interface HttpScenario {
  name: string;
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Called for every request: lets GET scenarios cycle through existing ids. */
  nextPath?: () => string;
  onResponse?: (status: number, body: string, headers: Record<string, unknown>) => void;
}

async function loadHttp(
  scenario: HttpScenario,
  seconds: number,
  connections = settings.connections,
): Promise<autocannon.Result> {
  const { nextPath, onResponse } = scenario;
  return autocannon({
    url: scenario.url,
    connections,
    duration: seconds,
    requests: [
      {
        method: scenario.method,
        headers: { 'content-type': 'application/json', ...scenario.headers },
        ...(scenario.body ? { body: scenario.body } : {}),
        ...(nextPath
          ? { setupRequest: (request: autocannon.Request) => ({ ...request, path: nextPath() }) }
          : {}),
        ...(onResponse
          ? {
              onResponse: (
                status: number,
                body: string,
                _context: object,
                headers?: Record<string, unknown>,
              ) => onResponse(status, body, headers ?? {}),
            }
          : {}),
      },
    ],
  });
}

interface MeasureOptions {
  /** Extra text for the notes column, computed after the measured run. */
  note?: () => string;
  /** Transactions so far in the database under test: reported per request. */
  transactions?: () => Promise<number>;
  /** Called between the warm-up and the measured run (reset counters). */
  beforeMeasured?: () => void;
  /** Shorter runs for the read-model query scenarios: [warm-up, measured] seconds. */
  seconds?: [number, number];
  /** Overrides the connection count (latency scenarios run below saturation). */
  connections?: number;
}

interface Measured {
  row: Row;
  /** Wall-clock bounds of the measured run, ms since the epoch. */
  window: { fromMs: number; toMs: number };
}

/** A short discarded run first (JIT, pools, caches), then the measured one at the same settings. */
async function measureHttp(scenario: HttpScenario, options: MeasureOptions = {}): Promise<Measured> {
  const [warmupS, durationS] = options.seconds ?? [settings.warmupS, settings.durationS];
  const connections = options.connections ?? settings.connections;
  log(`${scenario.name}: ${warmupS} s warm-up, ${durationS} s measured, ${connections} connections`);
  await loadHttp(scenario, warmupS, connections);
  options.beforeMeasured?.();
  const transactionsBefore = await options.transactions?.();
  const fromMs = Date.now();
  const result = await loadHttp(scenario, durationS, connections);
  const toMs = Date.now();
  const completed = result['2xx'] + result.non2xx;
  const notes = [options.note?.() ?? ''];
  if (options.transactions && transactionsBefore !== undefined) {
    const perRequest = ((await options.transactions()) - transactionsBefore) / completed;
    notes.push(`≥ ${perRequest.toFixed(2)} SQL transactions per request`);
  }
  return {
    row: {
      scenario: scenario.name,
      // Completed responses over the real elapsed time (autocannon's duration is in seconds).
      rate: completed / result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      failures: result.non2xx,
      errors: result.errors + result.timeouts,
      note: notes.filter(Boolean).join('; '),
    },
    window: { fromMs, toMs },
  };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

function createdId(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { id?: unknown };
    return typeof parsed.id === 'string' ? parsed.id : undefined;
  } catch {
    return undefined;
  }
}

function cycle(ids: readonly string[], prefix: string): () => string {
  if (ids.length === 0) throw new Error(`no ids to read for ${prefix}`);
  let next = 0;
  return () => `${prefix}${ids[next++ % ids.length]}`;
}

/**
 * N appenders, each appending one event to a new stream (expected revision no_stream) back to
 * back, straight on the port in this process: the event store's own ceiling, without HTTP.
 */
async function measureAppends(connectionString: string): Promise<Row> {
  const pool = createPool({ connectionString, max: settings.poolSize, applicationName: 'bench-appends' });
  const store = new PostgresEventStore(pool);
  try {
    await migrate(pool, eventStoreMigrations, 'tokenvault_app');
    const tenantId = randomUUID();
    let failures = 0;
    const run = async (seconds: number, latencies: number[]) => {
      const until = performance.now() + seconds * 1000;
      const appender = async () => {
        while (performance.now() < until) {
          const started = performance.now();
          try {
            await store.append(
              `bench-${randomUUID()}`,
              [{ type: 'BenchEventAppended', data: { at: Date.now() }, metadata: { tenant_id: tenantId } }],
              { expectedRevision: 'no_stream' },
            );
            latencies.push(performance.now() - started);
          } catch {
            failures++;
          }
        }
      };
      const started = performance.now();
      await Promise.all(Array.from({ length: settings.appenders }, appender));
      return (performance.now() - started) / 1000;
    };
    log(
      `event store appends: ${settings.warmupS} s warm-up, ${settings.durationS} s measured, ${settings.appenders} appenders`,
    );
    await run(settings.warmupS, []);
    failures = 0;
    const latencies: number[] = [];
    const elapsedS = await run(settings.durationS, latencies);
    latencies.sort((a, b) => a - b);
    return {
      scenario: 'event store append (port, in-process)',
      rate: latencies.length / elapsedS,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      failures,
      errors: 0,
      note: `${settings.appenders} appenders, 1 event per new stream`,
    };
  } finally {
    await store.close();
    await pool.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Projection lag

/** The protocol of the listener children: `ready` once listening, then observations on `dump`. */
type ListenerReply<Observation> = { type: 'ready' } | { type: 'observations'; observations: Observation[] };

interface Listener<Observation> {
  child: Child;
  dump(): Promise<Observation[]>;
}

/** A listener as a child process of its own, so the busy load generator cannot delay its timestamps. */
async function startListener<Observation>(
  name: string,
  file: string,
  env: NodeJS.ProcessEnv,
): Promise<Listener<Observation>> {
  const child = fork(`${benchDir}${file}`, [], {
    cwd: repoRoot,
    execArgv: [],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const tracked = track(name, child);
  const nextMessage = () =>
    new Promise<ListenerReply<Observation>>((resolve, reject) => {
      child.once('message', (message) => resolve(message as ListenerReply<Observation>));
      child.once('exit', () => reject(new Error(`${name} exited:\n${tracked.output()}`)));
    });
  const ready = await nextMessage();
  if (ready.type !== 'ready') throw new Error(`${name} did not start`);
  return {
    child: tracked,
    async dump() {
      const reply = nextMessage();
      child.send('dump');
      const message = await reply;
      if (message.type !== 'observations') throw new Error(`${name} sent no observations`);
      return message.observations;
    },
  };
}

const startLagListener = (connectionString: string) =>
  startListener<CheckpointObservation>('lag listener', 'lag-listener.ts', { DATABASE_URL: connectionString });

interface EventRow {
  commit: string;
  prepare: string;
  created_ms: number;
}

/**
 * Lag of one event = (receive time of the first checkpoint NOTIFY at or past the event's position)
 * − (es_events.created_at). created_at is now() of the appending transaction, i.e. its start, so
 * the figure includes the append's own execution and commit: it slightly overstates the lag.
 */
async function measureProjectionLag(
  servicePool: pg.Pool,
  observations: CheckpointObservation[],
  window: { fromMs: number; toMs: number },
): Promise<Row> {
  const { rows } = await servicePool.query<EventRow>(
    `SELECT transaction_id::text AS commit, global_position::text AS prepare,
            extract(epoch FROM created_at)::float8 * 1000 AS created_ms
     FROM es_events
     WHERE event_type = 'TokenCreated' AND created_at >= to_timestamp($1 / 1000.0) AND created_at < to_timestamp($2 / 1000.0)`,
    [window.fromMs, window.toMs],
  );
  // Checkpoints only move forward, so the observations are sorted by position: binary search.
  const lags: number[] = [];
  let unobserved = 0;
  for (const event of rows) {
    const position: Position = { commit: event.commit, prepare: event.prepare };
    let low = 0;
    let high = observations.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (comparePositions(observations[middle] as Position, position) >= 0) high = middle;
      else low = middle + 1;
    }
    const observation = observations[low];
    if (observation) lags.push(observation.receivedAtMs - event.created_ms);
    else unobserved++;
  }
  lags.sort((a, b) => a - b);
  return {
    scenario: 'projection lag under POST /tokens load',
    rate: null,
    p50Ms: percentile(lags, 50),
    p99Ms: percentile(lags, 99),
    failures: unobserved,
    errors: 0,
    note: `${lags.length} events, ${observations.length} checkpoints`,
  };
}

async function waitForProjector(servicePool: pg.Pool, timeoutMs = 15_000): Promise<void> {
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

/**
 * Committed + rolled-back transactions in a database so far. Divided by the request count it tells
 * how many transactions (each at least one round trip) one request costs, projector included.
 * PostgreSQL 15 publishes an idle backend's counters up to 10 s late: the pause catches most of
 * them, and the figure is a lower bound.
 */
async function transactionCount(observer: pg.Pool, database: string): Promise<number> {
  await sleep(1_500);
  const { rows } = await observer.query<{ count: number }>(
    'SELECT (xact_commit + xact_rollback)::float8 AS count FROM pg_stat_database WHERE datname = $1',
    [database],
  );
  return rows[0]?.count ?? Number.NaN;
}

// ---------------------------------------------------------------------------------------------
// Kafka relay

interface KafkaBroker {
  bootstrap: string;
  dir: string;
  pid: number;
}
let kafkaBroker: KafkaBroker | undefined;

/** A broker of the bench's own (infra/kafka); undefined when Kafka cannot run here. */
async function startKafka(): Promise<KafkaBroker | undefined> {
  if (!settings.kafka) return undefined;
  try {
    const port = await freePort();
    const dir = `${brokerDir(port)}-bench`;
    const { bootstrap, pid } = await startBroker({
      port,
      controllerPort: await freePort(),
      dir,
      fresh: true,
      quiet: true,
    });
    kafkaBroker = { bootstrap, dir, pid };
    log(`kafka broker on ${bootstrap}`);
    return kafkaBroker;
  } catch (error) {
    log(`no Kafka broker (${String(error).split('\n')[0]}): the relay rows are skipped`);
    return undefined;
  }
}

async function relayCaughtUp(servicePool: pg.Pool): Promise<{ done: boolean; relayed: number }> {
  const { rows } = await servicePool.query<{ done: boolean; relayed: number }>(
    `SELECT NOT EXISTS (
       SELECT 1 FROM es_events e, projection_checkpoints c
       WHERE c.name = 'kafka-relay' AND (e.transaction_id, e.global_position) > (c.commit_position, c.prepare_position)
     ) AND EXISTS (SELECT 1 FROM projection_checkpoints WHERE name = 'kafka-relay') AS done,
     (SELECT count(*)::int FROM es_events e, projection_checkpoints c
      WHERE c.name = 'kafka-relay' AND (e.transaction_id, e.global_position) <= (c.commit_position, c.prepare_position)) AS relayed`,
  );
  return rows[0] ?? { done: false, relayed: 0 };
}

/**
 * Relay throughput: the relay (services/relay, its own process) starts on a store that already
 * holds every event of the runs before; events per second from its first acknowledged batch until
 * its checkpoint reaches the head.
 */
async function measureRelayCatchUp(servicePool: pg.Pool, relay: Child): Promise<Row> {
  const deadline = Date.now() + 120_000;
  let first: { atMs: number; relayed: number } | undefined;
  for (;;) {
    if (exited(relay.process)) throw new Error(`the relay exited:\n${relay.output()}`);
    if (Date.now() > deadline) throw new Error(`the relay did not catch up:\n${relay.output()}`);
    const state = await relayCaughtUp(servicePool);
    const atMs = performance.now();
    if (!first && state.relayed > 0) first = { atMs, relayed: state.relayed };
    if (state.done && first) {
      const events = state.relayed - first.relayed;
      const seconds = (atMs - first.atMs) / 1000;
      return {
        scenario: 'Kafka relay catch-up (store → Kafka acked)',
        rate: events / seconds,
        p50Ms: Number.NaN,
        p99Ms: Number.NaN,
        failures: 0,
        errors: 0,
        note: `events/s: ${events} events after the first batch in ${seconds.toFixed(2)} s (batches of 500, acks=all)`,
      };
    }
    await sleep(20);
  }
}

const startKafkaListener = (env: NodeJS.ProcessEnv) =>
  startListener<KafkaObservation>('kafka listener', 'kafka-listener.ts', env);

/** Lag of one event = its first receipt by the kafkajs consumer − es_events.created_at. */
async function measureKafkaLag(
  servicePool: pg.Pool,
  observations: KafkaObservation[],
  window: { fromMs: number; toMs: number },
): Promise<Row> {
  const received = new Map<string, number>();
  for (const { id, receivedAtMs } of observations) if (!received.has(id)) received.set(id, receivedAtMs);
  const { rows } = await servicePool.query<{ event_id: string; created_ms: number }>(
    `SELECT event_id::text, extract(epoch FROM created_at)::float8 * 1000 AS created_ms
     FROM es_events
     WHERE event_type = 'TokenCreated' AND created_at >= to_timestamp($1 / 1000.0) AND created_at < to_timestamp($2 / 1000.0)`,
    [window.fromMs, window.toMs],
  );
  const lags: number[] = [];
  let missing = 0;
  for (const row of rows) {
    const at = received.get(row.event_id);
    if (at === undefined) missing++;
    else lags.push(at - row.created_ms);
  }
  lags.sort((a, b) => a - b);
  return {
    scenario: 'Kafka end-to-end lag under POST /tokens load',
    rate: null,
    p50Ms: percentile(lags, 50),
    p99Ms: percentile(lags, 99),
    failures: missing,
    errors: 0,
    note: `API write (append) → kafkajs consumer; ${lags.length} events; ${observations.length - received.size} duplicates`,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const fmt = (value: number | null, digits = 1) =>
  value === null || Number.isNaN(value) ? '–' : value.toFixed(digits);

function table(rows: Row[]): string {
  const lines = [
    '| scenario | req/s | p50 ms | p99 ms | non-2xx / failed | errors | notes |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.scenario} | ${fmt(row.rate, 0)} | ${fmt(row.p50Ms)} | ${fmt(row.p99Ms)} | ${row.failures} | ${row.errors} | ${row.note} |`,
    );
  }
  return lines.join('\n');
}

interface Target {
  name: string;
  measured: string;
  goal: string;
  met: boolean;
}

function targetsTable(targets: Target[]): string {
  const lines = ['| target | measured | goal | result |', '| --- | ---: | ---: | --- |'];
  for (const target of targets) {
    lines.push(
      `| ${target.name} | ${target.measured} | ${target.goal} | ${target.met ? 'met' : '**missed**'} |`,
    );
  }
  return lines.join('\n');
}

async function machineInfo(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const version = await client
    .query<{ server_version: string }>('SHOW server_version')
    .finally(() => client.end());
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const load = os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  return [
    `- nproc: ${os.availableParallelism()} (${cpu}), memory ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average at start ${load}`,
    `- node ${process.version}, PostgreSQL ${version.rows[0]?.server_version ?? '?'}, ${os.type()} ${os.release()}`,
    `- ${settings.connections} connections, ${settings.warmupS} s warm-up + ${settings.durationS} s per scenario, DATABASE_POOL_SIZE=${settings.poolSize}`,
  ].join('\n');
}

function requireRow(rows: Row[], scenario: string): Row {
  const row = rows.find((candidate) => candidate.scenario === scenario);
  if (!row) throw new Error(`no row ${scenario}`);
  return row;
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const suffix = randomBytes(4).toString('hex');
  const serviceDb = `tokenvault_bench_${suffix}`;
  const bareDb = `tokenvault_bench_${suffix}_bare`;
  let servicePool: pg.Pool | undefined;
  let observer: pg.Pool | undefined;
  const info = await machineInfo(databaseUrl('postgres'));
  try {
    const kafkaStarting = startKafka();
    await createDatabase(serviceDb);
    createdDatabases.push(serviceDb);
    await createDatabase(bareDb);
    createdDatabases.push(bareDb);

    const serviceEnv = {
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl(serviceDb),
      MASTER_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      DATABASE_POOL_SIZE: String(settings.poolSize),
      NODE_ENV: 'production',
      // The limiter still runs (its Redis round trip is part of what is measured) but never refuses.
      RATE_LIMIT_PER_MINUTE: '10000000',
      REACTOR_MAX_CONCURRENT_PER_TENANT: '10000',
    };
    const servicePort = await freePort();
    log(`starting the service on 127.0.0.1:${servicePort} (database ${serviceDb})`);
    const service = startTsChild(
      'service',
      'services/all-in-one/src/main.ts',
      { ...serviceEnv, PORT: String(servicePort) },
      settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfileDir}`] : [],
    );
    const serviceUrl = `http://127.0.0.1:${servicePort}`;

    const baselinePort = await freePort();
    const baseline = startTsChild('baseline', 'e2e/bench/baseline-server.ts', {
      HOST: '127.0.0.1',
      PORT: String(baselinePort),
      DATABASE_URL: databaseUrl(bareDb),
      DATABASE_POOL_SIZE: String(settings.poolSize),
    });
    const baselineUrl = `http://127.0.0.1:${baselinePort}`;

    await Promise.all([
      waitForHttp(`${serviceUrl}/readyz`, service),
      waitForHttp(`${baselineUrl}/healthz`, baseline),
    ]);
    log('bootstrapping a tenant');
    const bootstrapOutput = await runToCompletion(
      'bootstrap',
      'services/admin-cli/src/bootstrap.ts',
      ['--tenant-name', 'Bench', '--owner-email', 'bench@example.test'],
      serviceEnv,
    );
    const { api_key: apiKey, tenant_id: tenantId } = JSON.parse(
      bootstrapOutput.trim().split('\n').at(-1) ?? '{}',
    ) as {
      api_key?: string;
      tenant_id?: string;
    };
    if (!apiKey || !tenantId) throw new Error(`bootstrap printed no api_key: ${bootstrapOutput}`);
    const auth = { 'svc-api-key': apiKey };
    const poolOf = (database: string) =>
      new pg.Pool({ connectionString: databaseUrl(database), max: 1, application_name: 'bench-observer' });
    servicePool = poolOf(serviceDb);
    // Reads pg_stat_database from 'postgres', so its own queries are not counted for the others.
    const statsPool = poolOf('postgres');
    observer = statsPool;
    const serviceTransactions = () => transactionCount(statsPool, serviceDb);
    const bareTransactions = () => transactionCount(statsPool, bareDb);

    const rows: Row[] = [];

    const bareIds: string[] = [];
    const bareInsert = await measureHttp(
      {
        name: 'bare INSERT (POST /rows)',
        url: `${baselineUrl}/rows`,
        method: 'POST',
        body: tokenBody,
        onResponse: (status, body) => {
          const id = status === 201 ? createdId(body) : undefined;
          if (id) bareIds.push(id);
        },
      },
      { transactions: bareTransactions },
    );
    rows.push(bareInsert.row);

    // Started before the warm-up so that it has seen every checkpoint up to the measured window.
    const listener = await startLagListener(databaseUrl(serviceDb));
    const tokenIds: string[] = [];
    let lagging = 0;
    const postTokens = await measureHttp(
      {
        name: 'POST /tokens',
        url: `${serviceUrl}/tokens`,
        method: 'POST',
        headers: auth,
        body: tokenBody,
        onResponse: (status, body, headers) => {
          const id = status === 201 ? createdId(body) : undefined;
          if (id) tokenIds.push(id);
          if (Object.keys(headers).some((name) => name.toLowerCase() === readModelLagHeader)) lagging++;
        },
      },
      {
        beforeMeasured: () => (lagging = 0),
        transactions: serviceTransactions,
        note: () => `includes the read-your-writes wait; ${lagging} responses flagged ${readModelLagHeader}`,
      },
    );
    rows.push(postTokens.row);
    await waitForProjector(servicePool);
    const observations = await listener.dump();
    await stopChild(listener.child);
    rows.push(await measureProjectionLag(servicePool, observations, postTokens.window));

    const bareGet = await measureHttp(
      {
        name: 'bare GET (GET /rows/:id)',
        url: baselineUrl,
        method: 'GET',
        nextPath: cycle(bareIds, '/rows/'),
      },
      { transactions: bareTransactions, note: () => `cycling ${bareIds.length} ids` },
    );
    rows.push(bareGet.row);
    const getTokens = await measureHttp(
      {
        name: 'GET /tokens/{id}',
        url: serviceUrl,
        method: 'GET',
        headers: auth,
        nextPath: cycle(tokenIds, '/tokens/'),
      },
      { transactions: serviceTransactions, note: () => `cycling ${tokenIds.length} ids` },
    );
    rows.push(getTokens.row);

    // Reactors at 8 connections, in the same run as the bare GET, with the sandbox alone beside.
    const reactorConnections = 8;
    const { invocations } = await seedReactors(serviceUrl, apiKey);
    const reactorScenarios = invocations.map(([name]) => name);
    for (const [name, path, body] of invocations) {
      const measured = await measureHttp(
        { name, url: `${serviceUrl}${path}`, method: 'POST', headers: auth, body },
        {
          connections: reactorConnections,
          note: () => `${reactorConnections} connections; a BullMQ job each`,
        },
      );
      rows.push(measured.row);
    }
    const sandboxRuns = 2_000;
    log(`sandbox alone: ${sandboxRuns} sequential runs in a warm pool`);
    const sandboxDurations = await measureSandboxOnly(sandboxRuns);
    rows.push({
      scenario: 'sandbox alone (fresh context + run, warm isolate)',
      rate: sandboxRuns / (sandboxDurations.reduce((sum, ms) => sum + ms, 0) / 1000),
      p50Ms: percentile(sandboxDurations, 50),
      p99Ms: percentile(sandboxDurations, 99),
      failures: 0,
      errors: 0,
      note: `${sandboxRuns} sequential runs, in-process pool of one child process`,
    });
    reactorScenarios.push('sandbox alone (fresh context + run, warm isolate)');

    const queryScenarios: string[] = [];
    if (settings.readModels) {
      // Read models at size: a parent with 10,000 children, a tenant with 1,000,000 log rows.
      const childCount = 10_000;
      log(`creating ${childCount} children under one parent through the API`);
      const parentId = await seedChildren(serviceUrl, apiKey, childCount);
      await waitForProjector(servicePool);
      const querySeconds: [number, number] = [1, 5];
      // Latency targets: measured below saturation, so they show the query, not the queue.
      const queryConnections = 4;
      for (const [name, path] of [
        ['GET children, first page, type=token', `/tokens/${parentId}/children?type=token&size=20&page=1`],
        ['GET children, page 400, type=token', `/tokens/${parentId}/children?type=token&size=20&page=400`],
      ] as const) {
        const measured = await measureHttp(
          { name, url: serviceUrl, method: 'GET', headers: auth, nextPath: () => path },
          {
            seconds: querySeconds,
            connections: queryConnections,
            note: () =>
              `${childCount} children; ${queryConnections} connections; each child opened and read-audited`,
          },
        );
        rows.push(measured.row);
      }
      const logCount = 1_000_000;
      log(`writing ${logCount} audit-log rows as the projection would`);
      await seedLogs(servicePool, tenantId, logCount);
      const paths = logPaths(logCount);
      for (const [name, pathOf] of [
        ['GET /logs by entity_id', paths.byEntity],
        ['GET /logs, one-day range', paths.byDay],
        ['GET /logs, cursor deep in a day', paths.deepCursor],
      ] as const) {
        let index = 0;
        const measured = await measureHttp(
          { name, url: serviceUrl, method: 'GET', headers: auth, nextPath: () => pathOf(index++) },
          {
            seconds: querySeconds,
            connections: queryConnections,
            note: () => `${logCount} rows in the tenant; ${queryConnections} connections`,
          },
        );
        rows.push(measured.row);
      }
      log(`writing ${tokenListCount} token rows as the projection would`);
      const list = await seedTokenList(servicePool, serviceEnv.MASTER_KEY, tenantId, tokenListCount);
      for (const [name, pathOf] of [
        ['GET /tokens, first page', list.firstPage],
        ['GET /tokens, cursor deep in the list', list.deepCursor],
        ['GET /tokens by metadata', list.byMetadata],
      ] as const) {
        let index = 0;
        const measured = await measureHttp(
          { name, url: serviceUrl, method: 'GET', headers: auth, nextPath: () => pathOf(index++) },
          {
            seconds: querySeconds,
            connections: queryConnections,
            note: () =>
              `${tokenListCount} tokens in the tenant; ${queryConnections} connections; 20 opened and read-audited`,
          },
        );
        rows.push(measured.row);
      }
      queryScenarios.push(
        'GET /tokens, first page',
        'GET /tokens, cursor deep in the list',
        'GET /tokens by metadata',
        'GET children, first page, type=token',
        'GET children, page 400, type=token',
        'GET /logs by entity_id',
        'GET /logs, one-day range',
        'GET /logs, cursor deep in a day',
      );
    }

    // The HTTP servers are idle from here on; the appends run on the bare database.
    rows.push(await measureAppends(databaseUrl(bareDb)));

    // Kafka: the relay catches up on every event so far, then runs alongside a POST /tokens load
    // while a kafkajs consumer records when each event arrives.
    const kafka = await kafkaStarting;
    const kafkaScenarios: string[] = [];
    if (kafka) {
      const kafkaEnv = { KAFKA_BROKERS: kafka.bootstrap, KAFKA_TOPIC_PREFIX: `bench-${suffix}` };
      log('kafka relay: catching up on the events so far');
      const relay = startTsChild('relay', 'services/relay/src/main.ts', { ...serviceEnv, ...kafkaEnv });
      rows.push(await measureRelayCatchUp(servicePool, relay));
      const kafkaListener = await startKafkaListener(kafkaEnv);
      const withRelay = await measureHttp(
        {
          name: 'POST /tokens, relay to Kafka running',
          url: `${serviceUrl}/tokens`,
          method: 'POST',
          headers: auth,
          body: tokenBody,
        },
        { note: () => 'relay as its own process; kafkajs consumer in another' },
      );
      rows.push(withRelay.row);
      const pool = servicePool;
      const deadline = Date.now() + 60_000;
      while (!(await relayCaughtUp(pool)).done && Date.now() < deadline) await sleep(100);
      await sleep(1_000);
      const kafkaObservations = await kafkaListener.dump();
      await stopChild(kafkaListener.child);
      await stopChild(relay);
      rows.push(await measureKafkaLag(servicePool, kafkaObservations, withRelay.window));
      kafkaScenarios.push(
        'Kafka relay catch-up (store → Kafka acked)',
        'POST /tokens, relay to Kafka running',
        'Kafka end-to-end lag under POST /tokens load',
      );
    }

    const order = [
      'POST /tokens',
      'bare INSERT (POST /rows)',
      'GET /tokens/{id}',
      'bare GET (GET /rows/:id)',
      'event store append (port, in-process)',
      'projection lag under POST /tokens load',
      ...reactorScenarios,
      ...queryScenarios,
      ...kafkaScenarios,
    ];
    const ordered = order.map((scenario) => requireRow(rows, scenario));
    const rate = (scenario: string) => requireRow(rows, scenario).rate ?? 0;
    const writeRatio = rate('POST /tokens') / rate('bare INSERT (POST /rows)');
    const readRatio = rate('GET /tokens/{id}') / rate('bare GET (GET /rows/:id)');
    const lagP99 = requireRow(rows, 'projection lag under POST /tokens load').p99Ms;
    const targets: Target[] = [
      {
        name: 'POST /tokens ÷ bare INSERT (req/s)',
        measured: `${(writeRatio * 100).toFixed(0)}%`,
        goal: '≥ 50%',
        met: writeRatio >= 0.5,
      },
      {
        name: 'GET /tokens/{id} ÷ bare GET (req/s)',
        measured: `${(readRatio * 100).toFixed(0)}%`,
        goal: '≥ 60%',
        met: readRatio >= 0.6,
      },
      { name: 'projection lag p99', measured: `${fmt(lagP99)} ms`, goal: '< 50 ms', met: lagP99 < 50 },
      {
        name: 'trivial reactor ÷ bare GET (req/s)',
        measured: `${((rate(reactorScenarios[0]!) / rate('bare GET (GET /rows/:id)')) * 100).toFixed(0)}%`,
        goal: '≥ 30%',
        met: rate(reactorScenarios[0]!) / rate('bare GET (GET /rows/:id)') >= 0.3,
      },
      ...reactorScenarios.slice(0, 2).map((scenario) => {
        const p99 = requireRow(rows, scenario).p99Ms;
        return { name: `${scenario} p99`, measured: `${fmt(p99)} ms`, goal: '< 25 ms', met: p99 < 25 };
      }),
      ...queryScenarios.map((scenario) => {
        const p99 = requireRow(rows, scenario).p99Ms;
        return { name: `${scenario} p99`, measured: `${fmt(p99)} ms`, goal: '< 20 ms', met: p99 < 20 };
      }),
    ];
    const failures = rows.reduce((sum, row) => sum + row.failures + row.errors, 0);

    process.stdout.write(
      [
        '',
        `## Benchmark ${new Date().toISOString()}`,
        '',
        info,
        '',
        table(ordered),
        '',
        targetsTable(targets),
        '',
        failures === 0
          ? 'All requests succeeded (0 non-2xx, 0 errors).'
          : `**${failures} failed requests: the run is not valid.**`,
        '',
      ].join('\n'),
    );
    const serviceLogs = service.output().trim();
    if (serviceLogs) log(`the service logged (warn and above, last lines):\n${serviceLogs.slice(-2_000)}`);
    if (failures > 0) process.exitCode = 1;
  } finally {
    await servicePool?.end().catch(() => {});
    await observer?.end().catch(() => {});
    await cleanUp();
  }
}

const createdDatabases: string[] = [];
let cleaning: Promise<void> | undefined;

/** Stops every child, then drops every database this run created. Safe to call more than once. */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all([...children].map((child) => stopChild(child)));
    if (kafkaBroker) await stopBroker({ dir: kafkaBroker.dir, remove: true }).catch(() => {});
    kafkaBroker = undefined;
    for (const name of createdDatabases) {
      await dropDatabase(name).catch((error: unknown) => log(`could not drop ${name}: ${String(error)}`));
    }
  })();
  return cleaning;
}

// Interrupted or stuck: clean up from here, since main may be blocked in a load run.
function abort(reason: string, exitCode: number): void {
  log(`${reason}: cleaning up`);
  setTimeout(() => process.exit(exitCode), 20_000).unref();
  void cleanUp().finally(() => process.exit(exitCode));
}
process.once('SIGINT', () => abort('SIGINT', 130));
process.once('SIGTERM', () => abort('SIGTERM', 143));
setTimeout(() => abort(`still running after ${overallTimeoutMs / 1000} s`, 1), overallTimeoutMs).unref();

try {
  await main();
} catch (error) {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
}
