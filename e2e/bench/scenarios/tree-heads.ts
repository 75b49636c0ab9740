// The verifiable event log (docs/verifiable-log.md): the tree-head lag under the POST /tokens load,
// the tree-head signer's and verify-log's own rates over a backlog (in the bench process, on the
// bare database's appended events), and POST /tokens with the signer off and on.
import { projectorMigrations } from '@tokenvault/cqrs';
import { randomUUID } from 'node:crypto';
import { PostgresEventStore, eventStoreMigrations, type NewEvent } from '@tokenvault/eventstore';
import { createTreeHeadSigner, verifiableLogMigrations, verifyLog } from '@tokenvault/verifiable-log';
import { createLogger, createPool, migrate } from '@tokenvault/platform';
import { setTimeout as sleep } from 'node:timers/promises';
import { log } from '../support/log.ts';
import type { TimeWindow } from '../support/measure.ts';
import { stopChild, waitForHttp } from '../support/processes.ts';
import type { Row } from '../support/report.ts';
import { settings } from '../support/settings.ts';
import { startService, type Stack } from '../support/stack.ts';
import { measurePostTokens, type MeasuredWrites } from './http-vs-baseline.ts';

/** From an event's commit to its tree head's, for the events written in the window (all covered first). */
export async function measureTreeHeadLag(stack: Stack, window: TimeWindow): Promise<Row> {
  const from = new Date(window.fromMs).toISOString();
  const to = new Date(window.toMs).toISOString();
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await stack.servicePool.query<{ uncovered: number }>(
      `SELECT count(*)::int AS uncovered FROM es_events e
       WHERE e.created_at BETWEEN $1 AND $2 AND NOT EXISTS (SELECT 1 FROM log_tree_leaves l WHERE l.event_id = e.event_id)`,
      [from, to],
    );
    if (rows[0]!.uncovered === 0) break;
    if (Date.now() > deadline)
      throw new Error(`${rows[0]!.uncovered} events of the window had no tree head in 30 s`);
    await sleep(200);
  }
  const { rows } = await stack.servicePool.query<{
    events: number;
    tree_heads: number;
    p50: number;
    p99: number;
  }>(
    `SELECT count(*)::int AS events, count(DISTINCT h.number)::int AS tree_heads,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99
     FROM (SELECT h.number, extract(epoch FROM h.signed_at - e.created_at) * 1000 AS lag
           FROM es_events e JOIN log_tree_leaves l USING (event_id) JOIN log_tree_heads h ON h.number = l.tree_head_number
           WHERE e.created_at BETWEEN $1 AND $2) h`,
    [from, to],
  );
  const row = rows[0]!;
  return {
    scenario: 'tree-head lag (event commit → its tree head), under POST /tokens',
    rate: row.events / ((window.toMs - window.fromMs) / 1000),
    p50Ms: row.p50,
    p99Ms: row.p99,
    failures: 0,
    errors: 0,
    note: `events/s covered as written; ${row.events} events in ${row.tree_heads} tree heads (${(row.events / Math.max(row.tree_heads, 1)).toFixed(1)} per tree head)`,
  };
}

/** Token-like events (a ciphertext-sized data, full metadata), 100 per append, 4 appends at once. */
async function appendTokenEvents(store: PostgresEventStore, count: number): Promise<void> {
  const tenantId = randomUUID();
  let appended = 0;
  const appender = async () => {
    while (appended < count) {
      const size = Math.min(100, count - appended);
      appended += size;
      const events: NewEvent[] = Array.from({ length: size }, () => ({
        type: 'TokenCreated',
        data: {
          token_id: randomUUID(),
          tenant_id: tenantId,
          type: 'card',
          data_ciphertext: `v1.${randomUUID().repeat(5)}`,
          containers: ['/pci/high/'],
          metadata: { customer: 'c-42' },
          fingerprint: randomUUID(),
          created_at: new Date().toISOString(),
        },
        metadata: { tenant_id: tenantId, actor_id: randomUUID(), actor_type: 'application' as const },
      }));
      await store.append(`bench-log-${randomUUID()}`, events, { expectedRevision: 'no_stream' });
    }
  };
  await Promise.all(Array.from({ length: 4 }, appender));
}

/**
 * The tree-head signer catching up with every event of the bare database (the appends scenario's
 * and BENCH_LOG_EVENTS more), then verifyLog over them: each one's events per second, in this
 * process.
 */
export async function measureTreeHeadsAndVerify(connectionString: string): Promise<Row[]> {
  const pool = createPool({ connectionString, max: 4, applicationName: 'bench-tree-heads' });
  const store = new PostgresEventStore(pool);
  try {
    // The event store's own too: the appends group, which also migrates it, may not have run.
    await migrate(
      pool,
      [...eventStoreMigrations, ...projectorMigrations, ...verifiableLogMigrations],
      'tokenvault_app',
    );
    log(`appending ${settings.logEvents} token-like events to cover with tree heads`);
    await appendTokenEvents(store, settings.logEvents);
    const { rows } = await pool.query<{ events: number }>('SELECT count(*)::int AS events FROM es_events');
    const events = rows[0]!.events;
    log(`signing tree heads over a backlog of ${events} events, then verifying it`);
    const signer = createTreeHeadSigner({
      store,
      pool,
      logger: createLogger('warn'),
      batchSize: 1_000,
      // No pause between tree heads (a backlog's batches are full and would not wait anyway).
      intervalMs: 0,
    });
    const signStarted = performance.now();
    await signer.start();
    try {
      for (;;) {
        const covered = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM log_tree_leaves');
        if (covered.rows[0]!.n >= events) break;
        await sleep(20);
      }
    } finally {
      await signer.stop();
    }
    const signS = (performance.now() - signStarted) / 1000;
    const verifyStarted = performance.now();
    const verified = await verifyLog({ store, db: pool });
    const verifyS = (performance.now() - verifyStarted) / 1000;
    return [
      {
        scenario: 'tree heads over a backlog (events/s)',
        rate: events / signS,
        p50Ms: Number.NaN,
        p99Ms: Number.NaN,
        failures: 0,
        errors: 0,
        note: `${events} events, tree heads of up to 1,000, in ${signS.toFixed(1)} s`,
      },
      {
        scenario: 'verify-log (events/s)',
        rate: verified.events / verifyS,
        p50Ms: Number.NaN,
        p99Ms: Number.NaN,
        failures: verified.ok ? 0 : 1,
        errors: 0,
        note: `${verified.events} events, ${verified.treeHeads} tree heads in ${verifyS.toFixed(1)} s, through the event store port`,
      },
    ];
  } finally {
    await store.close();
    await pool.end();
  }
}

/**
 * POST /tokens with the service restarted with LOG_TREE_HEADS=off, then with it on again: adjacent
 * runs on the same database, the one with tree heads last (on the larger tables).
 */
export async function measurePostTokensWithAndWithoutTreeHeads(
  stack: Stack,
): Promise<{ off: MeasuredWrites; on: MeasuredWrites }> {
  const restartWith = async (treeHeads: 'on' | 'off'): Promise<Stack> => {
    await stopChild(stack.service);
    log(`restarting the service with LOG_TREE_HEADS=${treeHeads}`);
    const { service, serviceUrl } = await startService(`service-tree-heads-${treeHeads}`, {
      ...stack.serviceEnv,
      LOG_TREE_HEADS: treeHeads,
    });
    await waitForHttp(`${serviceUrl}/readyz`, service);
    stack = { ...stack, service, serviceUrl };
    return stack;
  };
  const off = await measurePostTokens(await restartWith('off'), 'POST /tokens, LOG_TREE_HEADS=off');
  const on = await measurePostTokens(
    await restartWith('on'),
    'POST /tokens, LOG_TREE_HEADS=on (run right after)',
  );
  return { off, on };
}
