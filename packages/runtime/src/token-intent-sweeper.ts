import { startTokenIntentSweeper } from '@tokenvault/tokens';
import type { RuntimeBase } from './runtime.ts';

/** Expires token intents past their 24 hours and shreds their keys (any process, or several). */
export const startTokenIntentSweeperOf = (runtime: RuntimeBase) =>
  startTokenIntentSweeper({
    pool: runtime.ownerPool,
    store: runtime.store,
    clock: runtime.clock,
    logger: runtime.logger,
    intervalMs: runtime.config.TOKEN_INTENT_SWEEP_INTERVAL_MS,
  });
