import { notifyInvalidation } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { startPeriodicTask, withTransaction, type Clock, type Logger, type Pool } from '@tokenvault/platform';
import {
  destroyExpiredTokenKeys,
  destroyTokenKey,
  orphanTokenKeys,
  tokenKeyInvalidation,
} from '@tokenvault/vault';
import { intentOfKeySubject } from './domain/token-intent.ts';
import { tokenIntentStream, tokenStream } from './domain/tokens.events.ts';

/** One sweep at a time across every process: a transaction-scoped advisory lock. */
const sweepLock = 7_240_001;
const batchSize = 1_000;
/** An orphan is a key this much older than any append that could still be carrying it. */
const orphanGraceMs = 10 * 60_000;

/**
 * Destroys the keys of expired tokens (their data becomes unreadable, in the event log too)
 * within TOKEN_KEY_SWEEP_INTERVAL_MS of `expires_at` on the injectable clock, and every process
 * forgets them. One process sweeps at a time (the others skip that round). Reads of an expired
 * token already answer 404; this makes it final.
 */
export async function sweepExpiredTokenKeys(pool: Pool, clock: Clock): Promise<number> {
  let destroyed = 0;
  for (;;) {
    const batch = await withTransaction(pool, async (tx) => {
      const locked = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
        sweepLock,
      ]);
      if (!locked.rows[0]!.locked) return 0;
      const gone = await destroyExpiredTokenKeys(tx, clock.now(), batchSize);
      for (const row of gone) await notifyInvalidation(tx, tokenKeyInvalidation(row.tenant_id, row.token_id));
      return gone.length;
    });
    destroyed += batch;
    if (batch < batchSize) return destroyed;
  }
}

/**
 * Removes keys whose token the event store never got (a crash between an external store's key
 * write and its append). With the PostgreSQL store there are none: the key commits with the event.
 */
export async function sweepOrphanTokenKeys(pool: Pool, store: EventStore, clock: Clock): Promise<number> {
  const olderThan = new Date(clock.now().getTime() - orphanGraceMs);
  let after: { tenantId: string; tokenId: string } | undefined;
  let removed = 0;
  for (;;) {
    const page = await orphanTokenKeys(pool, {
      olderThan,
      ...(after ? { after } : {}),
      limit: batchSize,
      // A token intent's key is a row of token_keys too, named after its intent (intentKeySubject).
      tokenExists: async (tenantId, subject) => {
        const intentId = intentOfKeySubject(subject);
        const stream = intentId ? tokenIntentStream(tenantId, intentId) : tokenStream(tenantId, subject);
        return (await store.readStream(stream)).length > 0;
      },
    });
    for (const orphan of page.orphans) {
      await destroyTokenKey(pool, orphan.tenantId, orphan.tokenId);
      removed++;
    }
    if (!page.last) return removed;
    after = page.last;
  }
}

/** How often, at most, the orphan sweep (an external store's) runs: orphans are rare and old. */
const orphanSweepEveryMs = 5 * 60_000;

/**
 * Runs the expiry sweep every `intervalMs` until stopped, and with an external event store
 * (`orphansIn`: no transaction shared with the keys) the orphan sweep every few minutes too.
 */
export function startTokenKeySweeper(options: {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
  orphansIn?: EventStore;
}): { stop(): Promise<void> } {
  let lastOrphanSweep = 0;
  return startPeriodicTask({
    run: async () => {
      const destroyed = await sweepExpiredTokenKeys(options.pool, options.clock);
      if (destroyed) options.logger.info({ destroyed }, 'expired tokens’ keys destroyed');
      if (options.orphansIn && Date.now() - lastOrphanSweep >= orphanSweepEveryMs) {
        lastOrphanSweep = Date.now();
        const removed = await sweepOrphanTokenKeys(options.pool, options.orphansIn, options.clock);
        if (removed) options.logger.info({ removed }, 'keys of tokens never stored removed');
      }
    },
    intervalMs: options.intervalMs,
    onError: (error) => options.logger.warn({ err: error }, 'token key sweep failed'),
  });
}
