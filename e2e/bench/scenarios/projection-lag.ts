// Projection lag under the POST /tokens load: from an event's append to the moment a client
// receives the projector's checkpoint NOTIFY at or past it (docs/performance.md, Projection lag).
import { comparePositions, type Position } from '@tokenvault/eventstore';
import type pg from 'pg';
import { percentile, type TimeWindow } from '../support/measure.ts';
import { startListener, stopChild } from '../support/processes.ts';
import type { Row } from '../support/report.ts';
import { waitForProjector, type Stack } from '../support/stack.ts';
import type { CheckpointObservation } from './projection-lag-listener.ts';

export interface ProjectionLagRecording {
  /** Waits for the projector to catch up, stops the listener, and measures the events of `window`. */
  measure(window: TimeWindow): Promise<Row>;
}

/**
 * Starts recording the checkpoint notifications (projection-lag-listener.ts, a child process).
 * Start it before the warm-up of the load, so that it has seen every checkpoint up to the
 * measured window.
 */
export async function startProjectionLagRecording(stack: Stack): Promise<ProjectionLagRecording> {
  const listener = await startListener<CheckpointObservation>(
    'lag listener',
    new URL('./projection-lag-listener.ts', import.meta.url),
    { DATABASE_URL: stack.serviceDatabaseUrl },
  );
  return {
    async measure(window) {
      await waitForProjector(stack.servicePool);
      const observations = await listener.dump();
      await stopChild(listener.child);
      return measureProjectionLag(stack.servicePool, observations, window);
    },
  };
}

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
