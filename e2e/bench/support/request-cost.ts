// What one answered request costs, over a measured run: CPU ms of the serving process and of
// PostgreSQL (cpu-usage.ts), and the database's statements and rows (pg_stat_statements, reset at
// the start), transactions (pg_stat_database) and rows written per table (pg_stat_user_tables).
//
// The window opens once the asynchronous processors have caught up with the warm-up, and its CPU
// and statements close once they have caught up with the measured load: the work a request leaves
// to them (projections, the sealer, the tree-head signer, …) counts with it. Caught up: no
// processor's checkpoint (projection_checkpoints: every processor reads every event) behind the
// log, leaving out one that has not moved for 5 s (not running here, as the Kafka relay between
// its runs). Transactions and rows written are read at least 11 s after the load: PostgreSQL 15
// publishes a backend's counters when it goes idle, up to 10 s late (PGSTAT_IDLE_INTERVAL), so they
// include up to 10 s of the processors' idle polling. pg_stat_statements and /proc count at once.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { CpuMeter, type CpuSources } from './cpu-usage.ts';
import { log } from './log.ts';

const statsFlushMs = 11_000;
const stalledAfterMs = 5_000;
const settleLimitMs = 60_000;
const topStatementCount = 6;
const queryTextLength = 110;

/** Where to look for one measured row's costs. */
export interface CostProbe extends CpuSources {
  /** One connection to the database under test (its per-table counters are local to it). */
  databasePool: pg.Pool;
  /** A connection to another database of the server (`postgres`): the cluster-wide views. */
  adminPool: pg.Pool;
  /** pg_stat_statements is loaded on the server. */
  statementsTracked: boolean;
  /** The service's PROJECTIONS mode; unset for the baseline. */
  projections?: string;
  /** The scenario of the baseline row this one is compared with. */
  baseline?: string;
}

export interface TopStatement {
  query: string;
  callsPerRequest: number;
  msPerCall: number;
  /** Run inside a function or trigger, not sent by the client. */
  nested: boolean;
}

/** Per answered request; null where the server does not tell (no pg_stat_statements, not local). */
export interface RequestCost {
  projections?: string;
  baseline?: string;
  serviceCpuMs: number;
  postgresCpuMs: number | null;
  /** Statements the clients sent, and those run inside functions and triggers. */
  statements: number | null;
  nestedStatements: number | null;
  /** Rows returned or affected, by every statement (nested ones included). */
  rows: number | null;
  transactions: number;
  rowsWritten: number;
  /** Inserted + updated + deleted rows, by table, most first. */
  writtenByTable: { table: string; rows: number }[];
  topStatements: TopStatement[] | null;
  /** Seconds from the end of the load until the processors caught up (the window's tail). */
  settledS: number;
  /** False when processors were still behind at the limit (the figures then miss a tail). */
  settled: boolean;
}

interface Counters {
  transactions: number;
  writtenByTable: Map<string, number>;
}

async function readCounters(probe: CostProbe): Promise<Counters> {
  const database = await probe.adminPool.query<{ transactions: number }>(
    'SELECT (xact_commit + xact_rollback)::float8 AS transactions FROM pg_stat_database WHERE datname = $1',
    [probe.database],
  );
  const tables = await probe.databasePool.query<{ name: string; written: number }>(
    `SELECT CASE WHEN schemaname = 'public' THEN relname ELSE schemaname || '.' || relname END AS name,
            (n_tup_ins + n_tup_upd + n_tup_del)::float8 AS written
     FROM pg_stat_user_tables`,
  );
  return {
    transactions: database.rows[0]?.transactions ?? Number.NaN,
    writtenByTable: new Map(tables.rows.map((row) => [row.name, row.written])),
  };
}

/**
 * Waits until no running processor is behind the log (none: a database without processors);
 * returns false when some still were at the limit.
 */
async function processorsCaughtUp(probe: CostProbe): Promise<boolean> {
  const lastMoved = new Map<string, { position: string; atMs: number }>();
  const deadline = Date.now() + settleLimitMs;
  for (;;) {
    let checkpoints: { name: string; position: string; behind: boolean }[];
    try {
      ({ rows: checkpoints } = await probe.databasePool.query<{
        name: string;
        position: string;
        behind: boolean;
      }>(
        `SELECT c.name, c.commit_position::text || ':' || c.prepare_position AS position,
                EXISTS (SELECT 1 FROM es_events e
                        WHERE (e.transaction_id, e.global_position) > (c.commit_position, c.prepare_position)) AS behind
         FROM projection_checkpoints c`,
      ));
    } catch (error) {
      if ((error as { code?: string }).code === '42P01') return true; // No processors in this database.
      throw error;
    }
    const now = Date.now();
    const running = checkpoints.filter((checkpoint) => {
      const seen = lastMoved.get(checkpoint.name);
      if (seen?.position !== checkpoint.position)
        lastMoved.set(checkpoint.name, { position: checkpoint.position, atMs: now });
      return !seen || seen.position !== checkpoint.position || now - seen.atMs < stalledAfterMs;
    });
    if (running.every((checkpoint) => !checkpoint.behind)) return true;
    if (now > deadline) return false;
    await sleep(250);
  }
}

async function untilStatsPublished(loadEndedMs: number): Promise<void> {
  await sleep(Math.max(0, loadEndedMs + statsFlushMs - Date.now()));
}

export interface CostWindow {
  /** Closes the window after the load that ended at `loadEndedMs`, answered `requests` times. */
  close(requests: number, loadEndedMs: number): Promise<RequestCost>;
}

/** Opens a window once the processors have caught up with the warm-up that ended at `warmupEndedMs`. */
export async function openCostWindow(probe: CostProbe, warmupEndedMs: number): Promise<CostWindow> {
  if (!(await processorsCaughtUp(probe)))
    log(`processors still behind ${settleLimitMs / 1000} s after the warm-up: measuring anyway`);
  await untilStatsPublished(warmupEndedMs);
  const before = await readCounters(probe);
  if (probe.statementsTracked) await probe.adminPool.query('SELECT pg_stat_statements_reset()');
  const meter = new CpuMeter(probe);
  return {
    async close(requests, loadEndedMs) {
      const settled = await processorsCaughtUp(probe);
      const settledS = (Date.now() - loadEndedMs) / 1000;
      const cpu = meter.stop();
      const statements = probe.statementsTracked ? await readStatements(probe) : null;
      log(
        settled
          ? `processors caught up ${settledS.toFixed(1)} s after the load`
          : `processors still behind ${settledS.toFixed(0)} s after the load: measured anyway`,
      );
      await untilStatsPublished(loadEndedMs);
      const after = await readCounters(probe);
      const writtenByTable = [...after.writtenByTable]
        .map(([table, written]) => ({
          table,
          rows: (written - (before.writtenByTable.get(table) ?? 0)) / requests,
        }))
        .filter((entry) => entry.rows > 0)
        .sort((a, b) => b.rows - a.rows);
      return {
        ...(probe.projections ? { projections: probe.projections } : {}),
        ...(probe.baseline ? { baseline: probe.baseline } : {}),
        serviceCpuMs: cpu.serviceMs / requests,
        postgresCpuMs: cpu.postgresMs === null ? null : cpu.postgresMs / requests,
        statements: statements && statements.topLevelCalls / requests,
        nestedStatements: statements && statements.nestedCalls / requests,
        rows: statements && statements.rows / requests,
        transactions: (after.transactions - before.transactions) / requests,
        rowsWritten: writtenByTable.reduce((sum, entry) => sum + entry.rows, 0),
        writtenByTable,
        topStatements:
          statements &&
          statements.top.map((statement) => ({
            query: statement.query,
            callsPerRequest: statement.calls / requests,
            msPerCall: statement.totalMs / statement.calls,
            nested: !statement.toplevel,
          })),
        settledS,
        settled,
      };
    },
  };
}

async function readStatements(probe: CostProbe) {
  const totals = await probe.adminPool.query<{ top_level: number; nested: number; rows: number }>(
    `SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0)::float8 AS top_level,
            coalesce(sum(calls) FILTER (WHERE NOT toplevel), 0)::float8 AS nested,
            coalesce(sum(rows), 0)::float8 AS rows
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
    [probe.database],
  );
  const top = await probe.adminPool.query<{
    query: string;
    calls: number;
    total_ms: number;
    toplevel: boolean;
  }>(
    `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), $2) AS query, calls::float8 AS calls,
            total_exec_time AS total_ms, toplevel
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
     ORDER BY total_exec_time DESC LIMIT $3`,
    [probe.database, queryTextLength, topStatementCount],
  );
  const row = totals.rows[0];
  return {
    topLevelCalls: row?.top_level ?? 0,
    nestedCalls: row?.nested ?? 0,
    rows: row?.rows ?? 0,
    top: top.rows.map((statement) => ({
      query: statement.query,
      calls: statement.calls,
      totalMs: statement.total_ms,
      toplevel: statement.toplevel,
    })),
  };
}

/** Whether the server behind `adminPool` has pg_stat_statements loaded and readable. */
export async function statementsTracked(adminPool: pg.Pool): Promise<boolean> {
  try {
    await adminPool.query('SELECT 1 FROM pg_stat_statements LIMIT 1');
    return true;
  } catch {
    return false;
  }
}
