// `npm run bench`: throughput and latency of the service against a bare express + pg baseline,
// event-store append rate, and projection lag. Everything runs on this machine (127.0.0.1 only),
// on fresh databases that are dropped at the end. See docs/performance.md for the method, and
// support/settings.ts for the knobs.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { logPaths, seedChildren, seedLogs } from './read-models.ts';
import { measureSandboxOnly, seedReactors } from './reactors.ts';
import { seedTokenList, tokenListCount } from './token-list.ts';
import type pg from 'pg';
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
import { databaseUrl } from './support/databases.ts';
import { startKafkaBroker } from './support/kafka-broker.ts';
import { runBench } from './support/lifecycle.ts';
import { log } from './support/log.ts';
import { measureHttp, percentile, type TimeWindow } from './support/measure.ts';
import { exited, startListener, startTsChild, stopChild, type Child } from './support/processes.ts';
import {
  machineInfo,
  p99Target,
  rateRatioTarget,
  renderReport,
  failureCount,
  type Row,
  type Target,
} from './support/report.ts';
import { settings } from './support/settings.ts';
import { startStack, waitForProjector } from './support/stack.ts';

const tokenBody = JSON.stringify({
  type: 'token',
  data: { name: 'Ada Lovelace', email: 'ada@example.test' },
});

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

const startLagListener = (connectionString: string) =>
  startListener<CheckpointObservation>('lag listener', new URL('./lag-listener.ts', import.meta.url), {
    DATABASE_URL: connectionString,
  });

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
  window: TimeWindow,
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

// ---------------------------------------------------------------------------------------------
// Kafka relay

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
  startListener<KafkaObservation>('kafka listener', new URL('./kafka-listener.ts', import.meta.url), env);

/** Lag of one event = its first receipt by the kafkajs consumer − es_events.created_at. */
async function measureKafkaLag(
  servicePool: pg.Pool,
  observations: KafkaObservation[],
  window: TimeWindow,
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
// Main

async function main(): Promise<void> {
  const info = await machineInfo(databaseUrl('postgres'));
  const kafkaStarting = startKafkaBroker();
  const stack = await startStack();
  try {
    const {
      serviceUrl,
      baselineUrl,
      auth,
      apiKey,
      tenantId,
      servicePool,
      serviceTransactions,
      bareTransactions,
    } = stack;

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
    const listener = await startLagListener(stack.serviceDatabaseUrl);
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
      const list = await seedTokenList(servicePool, stack.masterKey, tenantId, tokenListCount);
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
    rows.push(await measureAppends(stack.bareDatabaseUrl));

    // Kafka: the relay catches up on every event so far, then runs alongside a POST /tokens load
    // while a kafkajs consumer records when each event arrives.
    const kafka = await kafkaStarting;
    const kafkaScenarios: string[] = [];
    if (kafka) {
      const kafkaEnv = { KAFKA_BROKERS: kafka.bootstrap, KAFKA_TOPIC_PREFIX: `bench-${stack.runId}` };
      log('kafka relay: catching up on the events so far');
      const relay = startTsChild('relay', 'services/relay/src/main.ts', { ...stack.serviceEnv, ...kafkaEnv });
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
    const row = (scenario: string) => requireRow(rows, scenario);
    const bareGetRow = row('bare GET (GET /rows/:id)');
    const targets: Target[] = [
      rateRatioTarget(
        'POST /tokens ÷ bare INSERT (req/s)',
        row('POST /tokens'),
        row('bare INSERT (POST /rows)'),
        50,
      ),
      rateRatioTarget('GET /tokens/{id} ÷ bare GET (req/s)', row('GET /tokens/{id}'), bareGetRow, 60),
      p99Target('projection lag p99', row('projection lag under POST /tokens load'), 50),
      rateRatioTarget('trivial reactor ÷ bare GET (req/s)', row(reactorScenarios[0]!), bareGetRow, 30),
      ...reactorScenarios.slice(0, 2).map((scenario) => p99Target(`${scenario} p99`, row(scenario), 25)),
      ...queryScenarios.map((scenario) => p99Target(`${scenario} p99`, row(scenario), 20)),
    ];

    process.stdout.write(renderReport(info, ordered, targets));
    const serviceLogs = stack.service.output().trim();
    if (serviceLogs) log(`the service logged (warn and above, last lines):\n${serviceLogs.slice(-2_000)}`);
    if (failureCount(rows) > 0) process.exitCode = 1;
  } finally {
    await stack.close();
  }
}

function requireRow(rows: Row[], scenario: string): Row {
  const row = rows.find((candidate) => candidate.scenario === scenario);
  if (!row) throw new Error(`no row ${scenario}`);
  return row;
}

await runBench(main);
