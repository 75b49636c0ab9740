// The event store's own ceiling: appends straight on the port in the bench process, without HTTP,
// on the bare database (nothing subscribed).
import { randomUUID } from 'node:crypto';
import {
  PostgresEventStore,
  eventStoreMigrations,
  type InlineProjection,
  type PostgresEventStoreOptions,
} from '@tokenvault/eventstore';
import { createPool, migrate, type Pool } from '@tokenvault/platform';
import { log } from '../support/log.ts';
import { percentile } from '../support/measure.ts';
import type { Row } from '../support/report.ts';
import { settings } from '../support/settings.ts';

// A claim per event (as a deduplicated token has) and a row per event (as the token row).
const uniqueness: PostgresEventStoreOptions['uniqueness'] = (event) => ({
  claim: [{ scope: 'bench', key: randomUUID(), holder: (event.data as { holder: string }).holder }],
});
const rowWriter: InlineProjection = {
  handles: ['BenchEventAppended'],
  async apply(events, tx) {
    for (const event of events) {
      await tx.query('INSERT INTO bench_inline_rows (stream, revision) VALUES ($1, 0)', [event.stream]);
    }
  },
};
// The same row, written from what only the stored event knows: the store runs it after the append,
// statement by statement (one round trip per statement), as every append was written before.
const stepByStepRowWriter: InlineProjection = {
  handles: ['BenchEventAppended'],
  async apply(events, tx) {
    for (const event of events) {
      await tx.query('INSERT INTO bench_inline_rows (stream, revision) VALUES ($1, $2)', [
        event.stream,
        event.revision,
      ]);
    }
  },
};

// The service's defaults (APPEND_GROUP_COMMIT_MS, APPEND_GROUP_COMMIT_MAX).
const groupCommit = { windowMs: 1, maxAppends: 100 };

/**
 * N appenders, each appending one event to a new stream (expected revision no_stream) back to
 * back, straight on the port in this process: the event store's own ceiling, without HTTP. Then
 * the same with a uniqueness claim and an inline projection row per event, the common write of
 * the service: each append in one round trip of its own, the appends arriving together in one
 * transaction (group commit), and step by step (the way it went before), in the same run.
 */
export async function measureEventStoreAppends(connectionString: string): Promise<Row[]> {
  const pool = createPool({ connectionString, max: settings.poolSize, applicationName: 'bench-appends' });
  try {
    await migrate(pool, eventStoreMigrations, 'tokenvault_app');
    await pool.query(
      'CREATE TABLE IF NOT EXISTS bench_inline_rows (stream text PRIMARY KEY, revision int NOT NULL)',
    );
    return [
      await measureAppends(pool, 'event store append (port, in-process)', {}, '1 event per new stream'),
      await measureAppends(
        pool,
        'event store append, group commit',
        { groupCommit },
        '1 event per new stream, the appends arriving together in one transaction',
      ),
      await measureAppends(
        pool,
        'append + claim + inline row, one round trip',
        { uniqueness, inlineProjections: [rowWriter] },
        '1 event per new stream, its claim and its row pipelined in one transaction',
      ),
      await measureAppends(
        pool,
        'append + claim + inline row, group commit',
        { uniqueness, inlineProjections: [rowWriter], groupCommit },
        'the same writes, the appends arriving together pipelined in one transaction (as the service runs them)',
      ),
      await measureAppends(
        pool,
        'append + claim + inline row, step by step',
        { uniqueness, inlineProjections: [stepByStepRowWriter] },
        'the same writes, BEGIN, append, claim, row and COMMIT one round trip each',
      ),
    ];
  } finally {
    await pool.end();
  }
}

async function measureAppends(
  pool: Pool,
  scenario: string,
  options: PostgresEventStoreOptions,
  note: string,
): Promise<Row> {
  const store = new PostgresEventStore(pool, options);
  try {
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
              [
                {
                  type: 'BenchEventAppended',
                  data: { at: Date.now(), holder: tenantId },
                  metadata: { tenant_id: tenantId },
                },
              ],
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
      `${scenario}: ${settings.warmupS} s warm-up, ${settings.durationS} s measured, ${settings.appenders} appenders`,
    );
    await run(settings.warmupS, []);
    failures = 0;
    const latencies: number[] = [];
    const elapsedS = await run(settings.durationS, latencies);
    latencies.sort((a, b) => a - b);
    return {
      scenario,
      rate: latencies.length / elapsedS,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      failures,
      errors: 0,
      note: `${settings.appenders} appenders, ${note}`,
    };
  } finally {
    await store.close();
  }
}
