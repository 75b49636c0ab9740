// The event store's own ceiling: appends straight on the port in the bench process, without HTTP,
// on the bare database (nothing subscribed).
import { randomUUID } from 'node:crypto';
import { PostgresEventStore, eventStoreMigrations } from '@tokenvault/eventstore';
import { createPool, migrate } from '@tokenvault/platform';
import { log } from '../support/log.ts';
import { percentile } from '../support/measure.ts';
import type { Row } from '../support/report.ts';
import { settings } from '../support/settings.ts';

/**
 * N appenders, each appending one event to a new stream (expected revision no_stream) back to
 * back, straight on the port in this process: the event store's own ceiling, without HTTP.
 */
export async function measureEventStoreAppends(connectionString: string): Promise<Row> {
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
