import type { Queryable } from '@tokenvault/platform';
import { comparePositions, type EventMetadata, type Position, type RecordedEvent } from '../port.ts';

const eventColumns = `e.global_position::text AS global_position, e.transaction_id::text AS transaction_id,
  e.stream_id, e.stream_revision, e.event_id::text AS event_id, e.event_type, e.data, e.metadata, e.created_at`;

interface EventRow {
  global_position: string;
  transaction_id: string;
  stream_id: string;
  stream_revision: number | string;
  event_id: string;
  event_type: string;
  data: unknown;
  metadata: EventMetadata;
  created_at: Date;
}

const readStreamSql = `SELECT ${eventColumns} FROM es_events e WHERE e.stream_id = $1 ORDER BY e.stream_revision`;

/*
 * The snapshot fence: only transactions older than the oldest one still running are read, so a
 * transaction that took its ids early and commits late is never passed over. held_back tells that
 * committed rows exist beyond the fence (some other transaction is still open), so the caller
 * should look again soon rather than wait for a notification that has already come. It compares
 * the newest transaction id (one step down the commit-order index) with the fence: "EXISTS a row
 * at or past the fence" is planned as a sequential scan, which grows with the log (3 ms per poll
 * at 15,000 events).
 */
export const readAllSql = `
  WITH fence AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
  batch AS (
    SELECT e.* FROM es_events e
    WHERE e.transaction_id < (SELECT xmin FROM fence)
      AND (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint)
      AND ($3::text[] IS NULL OR EXISTS (
        SELECT 1 FROM unnest($3::text[]) AS p(prefix) WHERE starts_with(e.stream_id, p.prefix)))
    ORDER BY e.transaction_id, e.global_position
    LIMIT $4
  )
  SELECT held.held_back, held.fence, ${eventColumns}
  FROM (SELECT coalesce(
    (SELECT h.transaction_id FROM es_events h ORDER BY h.transaction_id DESC LIMIT 1) >= (SELECT xmin FROM fence),
    false) AS held_back, (SELECT xmin FROM fence)::text AS fence) held
  LEFT JOIN batch e ON true
  ORDER BY e.transaction_id, e.global_position`;

type ReadAllRow = { held_back: boolean; fence: string } & (EventRow | { [K in keyof EventRow]: null });

export interface Batch {
  events: RecordedEvent[];
  heldBack: boolean;
  /**
   * Every event at or before this position (of the prefixes read) is in `events` or was before
   * `after`: the last event's position when the batch is full; when it is not, the fence's (no
   * transaction below the fence can commit later), which may be past the last event.
   */
  seenThrough: Position;
}

/** The largest prepare position: with the fence's commit minus one, just below the fence. */
const lastPrepare = '9223372036854775807';

const origin: Position = { commit: '0', prepare: '0' };

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    event_id: row.event_id,
    type: row.event_type,
    data: row.data,
    metadata: row.metadata,
    stream: row.stream_id,
    revision: Number(row.stream_revision),
    position: { commit: row.transaction_id, prepare: row.global_position },
    created_at: row.created_at,
  };
}

export function assertLimit(limit: number, name: string): void {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`${name} must be a positive integer`);
}

export async function readStream(db: Queryable, stream: string): Promise<RecordedEvent[]> {
  const { rows } = await db.query<EventRow>({
    name: 'es_read_stream',
    text: readStreamSql,
    values: [stream],
  });
  return rows.map(toRecordedEvent);
}

/** Events after `after` in commit order, up to the snapshot fence; heldBack: more wait behind it. */
export async function readBatch(
  db: Queryable,
  after: Position | undefined,
  limit: number,
  streamPrefixes?: readonly string[],
): Promise<Batch> {
  assertLimit(limit, 'limit');
  const from = after ?? origin;
  const { rows } = await db.query<ReadAllRow>({
    name: 'es_read_all',
    text: readAllSql,
    values: [from.commit, from.prepare, streamPrefixes ?? null, limit],
  });
  const events: RecordedEvent[] = [];
  for (const row of rows) if (row.event_id !== null) events.push(toRecordedEvent(row));
  const last = events.at(-1)?.position ?? from;
  const belowFence = { commit: String(BigInt(rows[0]!.fence) - 1n), prepare: lastPrepare };
  const seenThrough = events.length === limit || comparePositions(belowFence, last) < 0 ? last : belowFence;
  return { events, heldBack: rows[0]!.held_back, seenThrough };
}

const headPositionSql = `SELECT transaction_id::text AS commit, global_position::text AS prepare FROM es_events
  ORDER BY transaction_id DESC, global_position DESC LIMIT 1`;

/** The position of the last event committed so far. */
export async function readHeadPosition(db: Queryable): Promise<Position | undefined> {
  const { rows } = await db.query<Position>({ name: 'es_head_position', text: headPositionSql });
  return rows[0];
}

/*
 * Every event this statement's snapshot sees, in commit order, without the fence: for a rebuild
 * that holds the read models locked, where an older transaction still open is one waiting on those
 * locks, whose events will be projected by that transaction itself.
 */
const readCommittedSql = `SELECT ${eventColumns} FROM es_events e
  WHERE (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint)
  ORDER BY e.transaction_id, e.global_position LIMIT $3`;

export async function readCommitted(
  db: Queryable,
  after: Position | undefined,
  limit: number,
): Promise<RecordedEvent[]> {
  assertLimit(limit, 'limit');
  const from = after ?? origin;
  const { rows } = await db.query<EventRow>({
    name: 'es_read_committed',
    text: readCommittedSql,
    values: [from.commit, from.prepare, limit],
  });
  return rows.map(toRecordedEvent);
}
