import type { Queryable } from '@tokenvault/platform';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { refusals } from './event-store-migrations.ts';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
} from '../port.ts';

/*
 * The stream step of the append statement, one per kind of expectation. $1 stream, $3 number of
 * events, $4 expected revision. Each returns the revision before the append, or no row when the
 * expectation fails.
 *
 * Commit order is transaction id order, so a stream's events must be written in the order of their
 * transaction ids. The advisory lock (taken without a transaction id) serialises the writers of a
 * stream before they get their ids, so a later writer always has the younger id; the
 * `transaction_id <= pg_current_xact_id()` guard refuses the rest: a transaction that got its id
 * earlier (it wrote something else first) and reaches the stream after a younger one.
 */
const streamSteps = {
  any: `
    INSERT INTO es_streams AS s (stream_id, revision, transaction_id)
    SELECT lock.stream_id, $3::int - 1, pg_current_xact_id() FROM lock
    ON CONFLICT (stream_id) DO UPDATE
      SET revision = s.revision + $3::int, transaction_id = pg_current_xact_id()
      WHERE s.transaction_id <= pg_current_xact_id()
    RETURNING s.revision - $3::int AS previous`,
  no_stream: `
    INSERT INTO es_streams (stream_id, revision, transaction_id)
    SELECT lock.stream_id, $3::int - 1, pg_current_xact_id() FROM lock
    ON CONFLICT (stream_id) DO NOTHING
    RETURNING -1::bigint AS previous`,
  stream_exists: `
    UPDATE es_streams AS s SET revision = s.revision + $3::int, transaction_id = pg_current_xact_id()
    WHERE s.stream_id = (SELECT stream_id FROM lock) AND s.transaction_id <= pg_current_xact_id()
    RETURNING s.revision - $3::int AS previous`,
  revision: `
    UPDATE es_streams AS s SET revision = s.revision + $3::int, transaction_id = pg_current_xact_id()
    WHERE s.stream_id = (SELECT stream_id FROM lock) AND s.revision = $4::bigint
      AND s.transaction_id <= pg_current_xact_id()
    RETURNING s.revision - $3::int AS previous`,
} as const;

// Two-key advisory locks live apart from single-key ones (the migration lock); 0x6573 is 'es'.
export const streamLockNamespace = 0x6573;

type StreamStep = keyof typeof streamSteps;

/**
 * One statement, one round trip: the events are inserted only when the stream step returned a row.
 * The refusing form raises ES001 instead of returning no row, so that the statements pipelined
 * behind it in its transaction fail too (store.ts).
 */
const appendStatement = (step: StreamStep, refusing: boolean) =>
  `WITH lock AS MATERIALIZED (
     SELECT $1::text AS stream_id, pg_advisory_xact_lock(${streamLockNamespace}, hashtext($1::text))
   ),
   stream AS (${streamSteps[step]}),
   appended AS (
     INSERT INTO es_events (stream_id, stream_revision, event_id, event_type, data, metadata)
     SELECT $1::text, stream.previous + e.ordinality, (e.event->>'event_id')::uuid, e.event->>'type',
            e.event->'data', e.event->'metadata'
     FROM stream CROSS JOIN jsonb_array_elements($2::jsonb) WITH ORDINALITY AS e(event, ordinality)
     ORDER BY e.ordinality
     RETURNING stream_revision, global_position, transaction_id, created_at
   )
   SELECT stream_revision, global_position::text AS global_position, transaction_id::text AS transaction_id,
          created_at
   FROM appended
   ${
     // An uncorrelated condition: evaluated once, before the first row, also when there is none.
     refusing
       ? `WHERE (SELECT es_refuse_unless(count(*) > 0, '${refusals.appendRefused}', $1::text) FROM appended)`
       : ''
   }
   ORDER BY stream_revision`;

const appendStatements = Object.fromEntries(
  Object.keys(streamSteps).map((step) => [step, appendStatement(step as StreamStep, false)]),
) as Record<StreamStep, string>;
const refusingAppendStatements = Object.fromEntries(
  Object.keys(streamSteps).map((step) => [step, appendStatement(step as StreamStep, true)]),
) as Record<StreamStep, string>;

export interface AppendStatement {
  stream: string;
  events: Required<Pick<NewEvent, 'event_id' | 'type' | 'data' | 'metadata'>>[];
  step: StreamStep;
  values: unknown[];
}

export function prepareAppend(
  stream: string,
  events: NewEvent[],
  expectedRevision: ExpectedRevision,
): AppendStatement {
  if (typeof stream !== 'string' || stream.length === 0) throw new TypeError('stream name must not be empty');
  if (!Array.isArray(events) || events.length === 0) throw new TypeError('append needs at least one event');
  const rows = events.map((event, index) => {
    if (typeof event.type !== 'string' || event.type.length === 0) {
      throw new TypeError(`event ${index} has no type`);
    }
    if (event.data === undefined) throw new TypeError(`event ${index} has no data`);
    if (typeof event.metadata !== 'object' || event.metadata === null) {
      throw new TypeError(`event ${index} has no metadata`);
    }
    return {
      event_id: event.event_id ?? randomUUID(),
      type: event.type,
      data: event.data,
      metadata: event.metadata,
    };
  });
  let step: StreamStep;
  let expected: number | null = null;
  if (typeof expectedRevision === 'number') {
    if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
      throw new TypeError(`expected revision must be a non-negative integer, got ${expectedRevision}`);
    }
    step = 'revision';
    expected = expectedRevision;
  } else if (
    expectedRevision === 'any' ||
    expectedRevision === 'no_stream' ||
    expectedRevision === 'stream_exists'
  ) {
    step = expectedRevision;
  } else {
    throw new TypeError(`unknown expected revision ${String(expectedRevision)}`);
  }
  const values: unknown[] = [stream, JSON.stringify(rows), rows.length];
  if (expected !== null) values.push(expected);
  return { stream, events: rows, step, values };
}

/** The statements of an append to several streams: at least one, each stream once. */
export function preparedStreamAppends(
  appends: readonly { stream: string; events: NewEvent[]; expectedRevision: ExpectedRevision }[],
): AppendStatement[] {
  if (appends.length === 0) throw new TypeError('appendStreams needs at least one stream');
  const streams = new Set(appends.map((one) => one.stream));
  if (streams.size !== appends.length) throw new TypeError('appendStreams names a stream twice');
  return appends.map((one) => prepareAppend(one.stream, one.events, one.expectedRevision));
}

export interface AppendRow {
  stream_revision: number | string;
  global_position: string;
  transaction_id: string;
  created_at: Date;
}

export interface Appended {
  result: AppendResult;
  /** The events as stored, in stream order: what inline projections apply. */
  recorded: RecordedEvent[];
}

/** The append as a query; `refusing`: a refused append raises ES001 instead of returning no row. */
export function appendQuery(statement: AppendStatement, refusing = false): pg.QueryConfig {
  return refusing
    ? {
        name: `es_append_${statement.step}_refusing`,
        text: refusingAppendStatements[statement.step],
        values: statement.values,
      }
    : {
        name: `es_append_${statement.step}`,
        text: appendStatements[statement.step],
        values: statement.values,
      };
}

/** The append's outcome from its rows; null when it was refused. */
export function appendedFrom(statement: AppendStatement, rows: readonly AppendRow[]): Appended | null {
  if (rows.length === 0) return null;
  const recorded = rows.map((row, index): RecordedEvent => {
    const event = statement.events[index]!;
    return {
      ...event,
      stream: statement.stream,
      revision: Number(row.stream_revision),
      position: { commit: row.transaction_id, prepare: row.global_position },
      created_at: row.created_at,
    };
  });
  return { result: { revision: recorded.at(-1)!.revision, position: recorded.at(-1)!.position }, recorded };
}

/**
 * Whether an error of the append statement says it was refused: ES001 from the refusing form, or
 * a duplicate stream revision (only reachable if es_streams and es_events disagree; still a
 * concurrency conflict).
 */
export function isAppendRefusal(error: unknown): boolean {
  const details = error as { code?: unknown; constraint?: unknown } | null;
  return (
    details?.code === refusals.appendRefused ||
    (details?.code === '23505' && details.constraint === 'es_events_stream_revision_unique')
  );
}

/**
 * One append statement, in the caller's transaction or on a pool. Null when the stream step
 * refused: a wrong expected revision, or a younger transaction that wrote the stream first
 * (retrying the whole transaction resolves that case).
 */
export async function appendOnce(db: Queryable, statement: AppendStatement): Promise<Appended | null> {
  try {
    const { rows } = await db.query<AppendRow>(appendQuery(statement));
    return appendedFrom(statement, rows);
  } catch (error) {
    if (isAppendRefusal(error)) return null;
    throw error;
  }
}

/**
 * Appends within the caller's transaction (or on a pool, in a transaction of its own), in one
 * statement. Throws WrongExpectedRevisionError when the expectation fails, and also when a younger
 * transaction wrote the stream first: retrying the whole transaction resolves that case.
 */
export async function appendToStream(
  db: Queryable,
  stream: string,
  events: NewEvent[],
  options: { expectedRevision: ExpectedRevision },
): Promise<AppendResult> {
  const appended = await appendOnce(db, prepareAppend(stream, events, options.expectedRevision));
  if (!appended) throw new WrongExpectedRevisionError(stream, options.expectedRevision);
  return appended.result;
}

/*
 * The appends of a group-commit batch (group-commit.ts) as one statement, each stream at most once:
 * every stream's advisory lock first, in lock-key order, all of them before the statement writes
 * (the count aggregates them before the stream steps get their one row to join), so that the
 * transaction id, assigned at the first write, is younger than every earlier writer's of these
 * streams, as with one append. Then the stream steps of each kind of expectation, each over its
 * own streams, and the events in the batch's order (so in global-position order). $1 streams,
 * $2 steps, $3 expected revisions (null but for `revision`), $4 events (a jsonb array per append),
 * $5 event counts. Raises ES001 when a stream step refused: it does not say which, the caller sends
 * the batch again append by append.
 */
const batchAppendStatement = `WITH batch AS MATERIALIZED (
     SELECT b.stream_id, b.step, b.expected, b.events, b.count, b.append_index
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::jsonb[], $5::int[]) WITH ORDINALITY
       AS b(stream_id, step, expected, events, count, append_index)
   ),
   lock AS MATERIALIZED (
     SELECT count(pg_advisory_xact_lock(${streamLockNamespace}, keys.key)) AS locked
     FROM (SELECT DISTINCT hashtext(stream_id) AS key FROM batch ORDER BY key) AS keys
   ),
   any_streams AS (
     INSERT INTO es_streams AS s (stream_id, revision, transaction_id)
     SELECT b.stream_id, b.count - 1, pg_current_xact_id() FROM lock CROSS JOIN batch b WHERE b.step = 'any'
     ON CONFLICT (stream_id) DO UPDATE
       SET revision = s.revision + excluded.revision + 1, transaction_id = pg_current_xact_id()
       WHERE s.transaction_id <= pg_current_xact_id()
     RETURNING s.stream_id, s.revision
   ),
   new_streams AS (
     INSERT INTO es_streams AS s (stream_id, revision, transaction_id)
     SELECT b.stream_id, b.count - 1, pg_current_xact_id() FROM lock CROSS JOIN batch b
     WHERE b.step = 'no_stream'
     ON CONFLICT (stream_id) DO NOTHING
     RETURNING s.stream_id, s.revision
   ),
   existing_streams AS (
     UPDATE es_streams AS s SET revision = s.revision + b.count, transaction_id = pg_current_xact_id()
     FROM lock CROSS JOIN batch b
     WHERE s.stream_id = b.stream_id AND b.step IN ('stream_exists', 'revision')
       AND (b.step = 'stream_exists' OR s.revision = b.expected)
       AND s.transaction_id <= pg_current_xact_id()
     RETURNING s.stream_id, s.revision
   ),
   stream AS MATERIALIZED (
     SELECT b.stream_id, moved.revision - b.count AS previous, b.events, b.append_index
     FROM (SELECT * FROM any_streams UNION ALL SELECT * FROM new_streams UNION ALL SELECT * FROM existing_streams)
       AS moved
     JOIN batch b USING (stream_id)
   ),
   appended AS (
     INSERT INTO es_events (stream_id, stream_revision, event_id, event_type, data, metadata)
     SELECT stream.stream_id, stream.previous + e.ordinality, (e.event->>'event_id')::uuid, e.event->>'type',
            e.event->'data', e.event->'metadata'
     FROM stream CROSS JOIN jsonb_array_elements(stream.events) WITH ORDINALITY AS e(event, ordinality)
     ORDER BY stream.append_index, e.ordinality
     RETURNING stream_id, stream_revision, global_position, transaction_id, created_at
   )
   SELECT stream_id, stream_revision, global_position::text AS global_position,
          transaction_id::text AS transaction_id, created_at
   FROM appended
   -- Uncorrelated: evaluated once, before the first row, also when there is none.
   WHERE (SELECT es_refuse_unless((SELECT count(*) FROM stream) = (SELECT count(*) FROM batch),
                                  '${refusals.appendRefused}', 'batch'))
   ORDER BY global_position`;

/**
 * The batch's appends in as few statements as the order allows: the first append of each stream
 * in the first, the second of each in the next, and so on, so that each stream is once per
 * statement and each append runs after the ones before it of its stream (as if one by one). Each
 * layer lists its appends in batch order.
 */
export function appendLayers(statements: readonly AppendStatement[]): AppendStatement[][] {
  const layers: AppendStatement[][] = [];
  const seen = new Map<string, number>();
  for (const statement of statements) {
    const layer = seen.get(statement.stream) ?? 0;
    seen.set(statement.stream, layer + 1);
    (layers[layer] ??= []).push(statement);
  }
  return layers;
}

/** One layer of appends (distinct streams) as one refusing statement; see batchAppendStatement. */
export function batchAppendQuery(layer: readonly AppendStatement[]): pg.QueryConfig {
  return {
    name: 'es_append_batch_refusing',
    text: batchAppendStatement,
    values: [
      layer.map((statement) => statement.stream),
      layer.map((statement) => statement.step),
      layer.map((statement) => (statement.step === 'revision' ? statement.values[3] : null)),
      layer.map((statement) => statement.values[1]),
      layer.map((statement) => statement.events.length),
    ],
  };
}

/** Each append's outcome from its layer's rows, in the layer's order. */
export function appendedFromBatch(
  layer: readonly AppendStatement[],
  rows: readonly (AppendRow & { stream_id: string })[],
): Appended[] {
  const byStream = new Map<string, AppendRow[]>();
  for (const row of rows) {
    const own = byStream.get(row.stream_id);
    if (own) own.push(row);
    else byStream.set(row.stream_id, [row]);
  }
  return layer.map((statement) => {
    const appended = appendedFrom(statement, byStream.get(statement.stream) ?? []);
    // The statement raises instead of leaving an append without rows.
    if (!appended) throw new Error(`the batch statement stored nothing for stream ${statement.stream}`);
    return appended;
  });
}
