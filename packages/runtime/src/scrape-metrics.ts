import client from 'prom-client';
import { createQueue, queueNames, type Queue, type QueueConfig } from '@tokenvault/jobs';
import { metricsRegistry, type Logger, type Pool } from '@tokenvault/platform';
import { backlogAfter, type Backlog } from '@tokenvault/eventstore';

/** Past this many events behind, the lag reads as this many (the count stays one bounded scan). */
export const lagEventsCap = 1_000_000;

export const queueStates = ['waiting', 'active', 'delayed', 'failed'] as const;

interface ScrapeSource {
  pool: Pool;
  queues: Queue[];
  logger: Logger;
}

/** The runtime whose state the gauges read (the last created: tests may run several in turn). */
let source: ScrapeSource | undefined;

let lagScrape: { at: number; result: Promise<Map<string, Backlog>> } | undefined;

/** Both lag gauges read one query per scrape (cached for a moment). */
function processorBacklogs(current: ScrapeSource): Promise<Map<string, Backlog>> {
  const now = Date.now();
  if (lagScrape && now - lagScrape.at < 1_000) return lagScrape.result;
  const result = (async () => {
    const { rows } = await current.pool.query<{ name: string; commit: string; prepare: string }>(
      `SELECT name, commit_position::text AS commit, prepare_position::text AS prepare
       FROM projection_checkpoints ORDER BY name`,
    );
    const backlogs = new Map<string, Backlog>();
    // Every processor reads every event: its lag is what the log holds past its checkpoint.
    for (const row of rows)
      backlogs.set(row.name, await backlogAfter(current.pool, row, { cap: lagEventsCap }));
    return backlogs;
  })();
  lagScrape = { at: now, result };
  return result;
}

function lagGauge(name: string, help: string, pick: (backlog: Backlog) => number) {
  return new client.Gauge({
    name,
    help,
    labelNames: ['processor'] as const,
    registers: [metricsRegistry],
    // Every process reads the same shared state: several HTTP processes' figures are one, not a sum.
    aggregator: 'max',
    async collect() {
      this.reset();
      const current = source;
      if (!current) return;
      try {
        for (const [processor, backlog] of await processorBacklogs(current))
          this.set({ processor }, pick(backlog));
      } catch (error) {
        current.logger.warn({ err: error }, 'metrics: processor lag not read');
      }
    },
  });
}

lagGauge(
  'tokenvault_processor_lag_events',
  `Committed events an async processor (its projection_checkpoints row) has yet to handle, up to ${lagEventsCap}.`,
  (backlog) => backlog.events,
);
lagGauge(
  'tokenvault_processor_lag_seconds',
  'Age of the oldest event an async processor has yet to handle; 0 when it is caught up.',
  (backlog) => backlog.oldestAgeSeconds,
);

new client.Gauge({
  name: 'tokenvault_queue_jobs',
  help: 'Jobs in a BullMQ queue, by queue and state (waiting, active, delayed, failed), read from Redis at scrape.',
  labelNames: ['queue', 'state'] as const,
  registers: [metricsRegistry],
  aggregator: 'max',
  async collect() {
    this.reset();
    const current = source;
    if (!current) return;
    try {
      const counts = await Promise.all(current.queues.map((queue) => queue.getJobCounts(...queueStates)));
      current.queues.forEach((queue, index) => {
        for (const state of queueStates) this.set({ queue: queue.name, state }, counts[index]?.[state] ?? 0);
      });
    } catch (error) {
      current.logger.warn({ err: error }, 'metrics: queue depth not read');
    }
  },
});

/**
 * Points the scrape-time gauges at this runtime's database and queues; close() lets go of them
 * (and of the queues' Redis connections).
 */
export function startScrapeMetrics(
  config: QueueConfig,
  pool: Pool,
  logger: Logger,
): { close(): Promise<void> } {
  const queues = queueNames.map((name) => createQueue(name, config, logger));
  const mine: ScrapeSource = { pool, queues, logger };
  source = mine;
  lagScrape = undefined;
  return {
    async close() {
      if (source === mine) source = undefined;
      lagScrape = undefined;
      await Promise.all(queues.map((queue) => queue.close()));
    },
  };
}
