import {
  eventStoreAppendDuration,
  eventStoreAppendsTotal,
  eventStoreEventsAppendedTotal,
  streamCategoryOf,
  type Queryable,
} from '@tokenvault/platform';
import { WrongExpectedRevisionError, type AppendResult, type Position } from './port.ts';

/** Counts and times one append (tokenvault_eventstore_*, docs/metrics.md). */
export async function observeAppend(
  stream: string,
  eventCount: number,
  append: () => Promise<AppendResult>,
): Promise<AppendResult> {
  const category = streamCategoryOf(stream);
  const started = process.hrtime.bigint();
  let outcome = 'error';
  try {
    const result = await append();
    outcome = 'ok';
    eventStoreEventsAppendedTotal.inc({ category }, eventCount);
    return result;
  } catch (error) {
    if (error instanceof WrongExpectedRevisionError) outcome = 'wrong_expected_revision';
    throw error;
  } finally {
    eventStoreAppendsTotal.inc({ category, outcome });
    eventStoreAppendDuration.observe({ outcome }, Number(process.hrtime.bigint() - started) / 1e9);
  }
}

export interface Backlog {
  /** Committed events after the position (of the given stream prefixes), at most `cap`. */
  events: number;
  /** Age in seconds of the oldest of them; 0 when there are none. */
  oldestAgeSeconds: number;
}

/**
 * What a subscriber at `after` has yet to see, in the PostgreSQL store: the number of committed
 * events past it (counted up to `cap`, so a far-behind subscriber costs one bounded index scan)
 * and the age of the first. A processor's lag, for metrics.
 */
export async function backlogAfter(
  db: Queryable,
  after: Position,
  options: { streamPrefixes?: readonly string[]; cap: number },
): Promise<Backlog> {
  const { rows } = await db.query<{ events: number; oldest: number | null }>(
    `WITH fence AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
     behind AS (
       SELECT e.created_at FROM es_events e, fence
       WHERE e.transaction_id < fence.xmin
         AND (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint)
         AND ($3::text[] IS NULL OR EXISTS (
           SELECT 1 FROM unnest($3::text[]) AS p(prefix) WHERE starts_with(e.stream_id, p.prefix)))
       ORDER BY e.transaction_id, e.global_position
       LIMIT $4)
     SELECT count(*)::int AS events,
            extract(epoch FROM clock_timestamp() - min(created_at))::float8 AS oldest
     FROM behind`,
    [after.commit, after.prepare, options.streamPrefixes ?? null, options.cap],
  );
  const row = rows[0];
  return { events: row?.events ?? 0, oldestAgeSeconds: Math.max(0, row?.oldest ?? 0) };
}
