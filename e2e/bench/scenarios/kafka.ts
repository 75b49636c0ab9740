// Kafka: the relay (services/relay, its own process) catches up on every event so far, then runs
// alongside a POST /tokens load while a kafkajs consumer (kafka-listener.ts, another process)
// records when each event arrives.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { KafkaBroker } from '../support/kafka-broker.ts';
import { log } from '../support/log.ts';
import { measureHttp, percentile, type TimeWindow } from '../support/measure.ts';
import { exited, startListener, startTsChild, stopChild, type Child } from '../support/processes.ts';
import type { Row } from '../support/report.ts';
import type { Stack } from '../support/stack.ts';
import { postTokensScenario } from './http-vs-baseline.ts';
import type { KafkaObservation } from './kafka-listener.ts';

/** Rows: the relay's catch-up rate, POST /tokens with the relay running, the end-to-end lag. */
export async function measureKafkaRelay(stack: Stack, broker: KafkaBroker): Promise<Row[]> {
  const kafkaEnv = { KAFKA_BROKERS: broker.bootstrap, KAFKA_TOPIC_PREFIX: `bench-${stack.runId}` };
  log('kafka relay: catching up on the events so far');
  const relay = startTsChild('relay', 'services/relay/src/main.ts', { ...stack.serviceEnv, ...kafkaEnv });
  const catchUp = await measureRelayCatchUp(stack.servicePool, relay);
  const kafkaListener = await startListener<KafkaObservation>(
    'kafka listener',
    new URL('./kafka-listener.ts', import.meta.url),
    kafkaEnv,
  );
  const withRelay = await measureHttp(postTokensScenario(stack, 'POST /tokens, relay to Kafka running'), {
    note: () => 'relay as its own process; kafkajs consumer in another',
  });
  const deadline = Date.now() + 60_000;
  while (!(await relayCaughtUp(stack.servicePool)).done && Date.now() < deadline) await sleep(100);
  await sleep(1_000);
  const kafkaObservations = await kafkaListener.dump();
  await stopChild(kafkaListener.child);
  await stopChild(relay);
  const lag = await measureKafkaLag(stack.servicePool, kafkaObservations, withRelay.window);
  return [catchUp, withRelay.row, lag];
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
