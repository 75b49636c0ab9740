import { randomUUID } from 'node:crypto';
import type { EventStore } from '@tokenvault/eventstore';
import { startPeriodicTask, type Clock, type Logger, type Pool } from '@tokenvault/platform';
import { tokenIntentCommandHandler } from './commands/token-intents.commands.ts';

const batchSize = 500;

/**
 * Expires the token intents whose `expires_at` has passed at the clock's now: a
 * TokenIntentExpired each, whose append destroys the intent's key (token-keys.projection.ts).
 * Reads the read model of held intents (owner role, every tenant); an intent converted or deleted
 * meanwhile is left as it is (the decider decides nothing), so several processes may sweep at once.
 * The key's row carries the same expiry, so the token key sweep destroys it too if this one lags.
 */
export async function sweepExpiredTokenIntents(pool: Pool, store: EventStore, clock: Clock): Promise<number> {
  const handle = tokenIntentCommandHandler(store);
  let expired = 0;
  for (;;) {
    const now = clock.now();
    const due = await pool.query<{ tenant_id: string; intent_id: string }>(
      `SELECT tenant_id, intent_id FROM token_intents WHERE expires_at <= $1
       ORDER BY expires_at LIMIT $2`,
      [now, batchSize],
    );
    let appended = 0;
    for (const row of due.rows) {
      const outcome = await handle(
        {
          type: 'ExpireTokenIntent',
          tenantId: row.tenant_id,
          intentId: row.intent_id,
          now: now.toISOString(),
        },
        { tenant_id: row.tenant_id, actor_type: 'system', correlation_id: randomUUID() },
      );
      if (outcome.position !== null) appended++;
    }
    expired += appended;
    // A full batch that expired nothing is rows the read model has not caught up on: next round.
    if (due.rows.length < batchSize || appended === 0) return expired;
  }
}

/** Runs the intent expiry sweep every `intervalMs` (TOKEN_INTENT_SWEEP_INTERVAL_MS) until stopped. */
export function startTokenIntentSweeper(options: {
  pool: Pool;
  store: EventStore;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
}): { stop(): Promise<void> } {
  return startPeriodicTask({
    run: async () => {
      const expired = await sweepExpiredTokenIntents(options.pool, options.store, options.clock);
      if (expired) options.logger.info({ expired }, 'expired token intents shredded');
    },
    intervalMs: options.intervalMs,
    onError: (error) => options.logger.warn({ err: error }, 'token intent sweep failed'),
  });
}
