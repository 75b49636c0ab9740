import pg from 'pg';
import type { Writable } from 'node:stream';
import type { PoolClient } from '@tokenvault/platform';
import type { RecordedEvent } from '../port.ts';
import type { AppendStatement } from './append.ts';

/**
 * Thrown (and caught by the store) when an inline projection, run ahead of its append, touches
 * what only the append knows: a stored event's revision, position or creation time, or the result
 * of one of its own statements. The store then runs the append in an ordinary transaction instead.
 */
export class NeedsStoredAppend extends Error {
  constructor(what: string) {
    super(`${what} is known only once the append has run`);
    this.name = 'NeedsStoredAppend';
  }
}

/**
 * The events of an append as an inline projection sees them before the append has run: type, data,
 * metadata, id and stream; reading the revision, position or creation time throws NeedsStoredAppend.
 */
export function eventsAheadOfAppend(statement: AppendStatement): RecordedEvent[] {
  return statement.events.map((event) => {
    const ahead = { ...event, stream: statement.stream };
    for (const field of ['revision', 'position', 'created_at'] as const) {
      Object.defineProperty(ahead, field, {
        enumerable: true,
        get: () => {
          throw new NeedsStoredAppend(`an event's ${field}`);
        },
      });
    }
    return ahead as RecordedEvent;
  });
}

/** The answer an inline projection gets ahead of the append: reading it throws NeedsStoredAppend. */
const unreadResult = Object.freeze(
  Object.defineProperties(
    {},
    Object.fromEntries(
      ['rows', 'rowCount', 'fields', 'command', 'oid'].map((field) => [
        field,
        {
          get: () => {
            throw new NeedsStoredAppend(`a statement's ${field}`);
          },
        },
      ]),
    ),
  ),
);

/**
 * What an inline projection writes through when it runs ahead of its append: each query is
 * recorded, to be sent in the append's pipelined batch, and answered at once with a result that
 * cannot be read.
 */
export class RecordingClient {
  readonly queries: pg.QueryConfig[] = [];

  /** Typed as the transaction's client: the only method it has is query. */
  readonly client = {
    query: (config: string | pg.QueryConfig, values?: unknown[]) => {
      if (typeof config !== 'string' && typeof (config as { submit?: unknown }).submit === 'function') {
        throw new NeedsStoredAppend('a streamed query');
      }
      const query: pg.QueryConfig = typeof config === 'string' ? { text: config } : { ...config };
      if (values !== undefined) query.values = values;
      this.queries.push(query);
      return Promise.resolve(unreadResult);
    },
  } as unknown as PoolClient;
}

export type Settled = { ok: true; result: pg.QueryResult } | { ok: false; error: unknown };

/**
 * BEGIN, the queries and COMMIT written to one connection at once (pg's pipeline mode, the
 * socket corked around them: one write) and answered together: one round trip. Each query is
 * synced on its own; once one fails, PostgreSQL refuses the rest of the transaction and the COMMIT
 * rolls it back, so it is all or nothing, as in a transaction run statement by statement. Returns
 * every query's outcome in order; throws only when the batch failed without a query saying why.
 */
export async function sendInOneTransaction(
  pool: pg.Pool,
  queries: readonly pg.QueryConfig[],
): Promise<Settled[]> {
  const client = await pool.connect();
  // pg's pipeline mode is a client setting; the pool's clients run without it except for this batch.
  const pipelined = client as unknown as { pipeline: boolean; connection: { stream: Writable } };
  let broken: Error | undefined;
  try {
    pipelined.pipeline = true;
    const stream = pipelined.connection.stream;
    const sent: Promise<Settled>[] = [];
    stream.cork();
    try {
      for (const query of [{ text: 'BEGIN' }, ...queries, { text: 'COMMIT' }]) {
        sent.push(
          client.query(query).then(
            (result): Settled => ({ ok: true, result }),
            (error: unknown): Settled => ({ ok: false, error }),
          ),
        );
      }
    } finally {
      stream.uncork();
    }
    const outcomes = await Promise.all(sent);
    const lost = outcomes.find((outcome) => !outcome.ok && !(outcome.error instanceof pg.DatabaseError));
    // Not an answer from PostgreSQL (the connection failed): the client must not be reused.
    if (lost && !lost.ok) broken = lost.error instanceof Error ? lost.error : new Error(String(lost.error));
    const begin = outcomes[0]!;
    const commit = outcomes.at(-1)!;
    const answered = outcomes.slice(1, -1);
    if (!begin.ok) throw begin.error;
    if (answered.some((outcome) => !outcome.ok)) return answered;
    if (!commit.ok) throw commit.error;
    if (commit.result.command !== 'COMMIT')
      throw new Error(`the transaction ended with ${commit.result.command}`);
    return answered;
  } finally {
    pipelined.pipeline = false;
    client.release(broken);
  }
}
