// The event store's own ceiling: appends straight on the port in the bench process, without HTTP,
// on the bare database (nothing subscribed).
import { randomUUID } from 'node:crypto';
import {
  PostgresEventStore,
  eventStoreMigrations,
  independentRowsStatement,
  type InlineProjection,
  type PostgresEventStoreOptions,
} from '@tokenvault/eventstore';
import pg from 'pg';
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
// The same row, declared independent of the batch's other statements: group commit sends the
// rows of a batch's appends as one statement.
const independentRowWriter: InlineProjection = {
  handles: ['BenchEventAppended'],
  async apply(events, tx) {
    await tx.query(
      independentRowsStatement(
        'bench_inline_rows_inserted',
        `INSERT INTO bench_inline_rows (stream, revision)
         SELECT r.stream, 0 FROM jsonb_to_recordset($1::jsonb) AS r(stream text)`,
        events.map((event) => ({ stream: event.stream })),
      ),
    );
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
  const statements = await statementCounter(connectionString);
  try {
    await migrate(pool, eventStoreMigrations, 'tokenvault_app');
    await pool.query(
      'CREATE TABLE IF NOT EXISTS bench_inline_rows (stream text PRIMARY KEY, revision int NOT NULL)',
    );
    return [
      await measureAppends(
        pool,
        'event store append (port, in-process)',
        {},
        '1 event per new stream',
        statements,
      ),
      await measureAppends(
        pool,
        'event store append, group commit',
        { groupCommit },
        '1 event per new stream, the appends arriving together in one transaction (one multi-row append statement)',
        statements,
      ),
      await measureAppends(
        pool,
        'append + claim + inline row, one round trip',
        { uniqueness, inlineProjections: [rowWriter] },
        '1 event per new stream, its claim and its row pipelined in one transaction',
        statements,
      ),
      await measureAppends(
        pool,
        'append + claim + inline row, group commit',
        { uniqueness, inlineProjections: [rowWriter], groupCommit },
        'the same writes, the appends arriving together in one transaction: one append statement, one claim statement, a row statement per append (as the service runs them)',
        statements,
      ),
      await measureAppends(
        pool,
        'append + claim + independent inline row, group commit',
        { uniqueness, inlineProjections: [independentRowWriter], groupCommit },
        'the same writes, the row declared independent (independentRowsStatement): one statement for the rows of a batch',
        statements,
      ),
      await measureAppends(
        pool,
        'append + claim + inline row, step by step',
        { uniqueness, inlineProjections: [stepByStepRowWriter] },
        'the same writes, BEGIN, append, claim, row and COMMIT one round trip each',
        statements,
      ),
    ];
  } finally {
    await pool.end();
    await statements.close();
  }
}

interface StatementCount {
  /** Statements the clients sent, BEGIN and COMMIT left out. */
  statements: number;
  commits: number;
}

/**
 * Counts the statements the appenders send to the database, from pg_stat_statements (in the
 * `postgres` database of the server, where the bench's cluster has it; its own queries untracked).
 * Counts nothing (null) where the server does not have it.
 */
async function statementCounter(connectionString: string): Promise<{
  count(): Promise<StatementCount | null>;
  close(): Promise<void>;
}> {
  const url = new URL(connectionString);
  const database = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const observer = new pg.Pool({
    connectionString: url.toString(),
    max: 1,
    application_name: 'bench-observer',
    options: '-c pg_stat_statements.track=none',
  });
  const count = async (): Promise<StatementCount | null> => {
    try {
      const { rows } = await observer.query<{ statements: number; commits: number }>(
        `SELECT coalesce(sum(calls) FILTER (WHERE query NOT IN ('BEGIN', 'COMMIT')), 0)::float8 AS statements,
                coalesce(sum(calls) FILTER (WHERE query = 'COMMIT'), 0)::float8 AS commits
         FROM pg_stat_statements
         WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [database],
      );
      return rows[0]!;
    } catch {
      return null;
    }
  };
  return { count, close: () => observer.end() };
}

async function measureAppends(
  pool: Pool,
  scenario: string,
  options: PostgresEventStoreOptions,
  note: string,
  statements: { count(): Promise<StatementCount | null> },
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
    const before = await statements.count();
    const elapsedS = await run(settings.durationS, latencies);
    const after = await statements.count();
    latencies.sort((a, b) => a - b);
    const perAppend = (count: number) => (count / (latencies.length + failures)).toFixed(2);
    const cost =
      before && after
        ? `; per append ${perAppend(after.statements - before.statements)} statements (BEGIN and COMMIT aside) and ${perAppend(after.commits - before.commits)} COMMITs`
        : '';
    return {
      scenario,
      rate: latencies.length / elapsedS,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      failures,
      errors: 0,
      note: `${settings.appenders} appenders, ${note}${cost}`,
    };
  } finally {
    await store.close();
  }
}
