import { startTokenKeySweeper } from '@tokenvault/tokens';
import type { RuntimeBase } from './runtime.ts';

/**
 * Destroys expired tokens' keys (one process at a time sweeps: run it in any, or several), and
 * with EVENTSTORE_URL the keys a crash left without their token.
 */
export const startTokenKeySweeperOf = (runtime: RuntimeBase) =>
  startTokenKeySweeper({
    pool: runtime.ownerPool,
    clock: runtime.clock,
    logger: runtime.logger,
    intervalMs: runtime.config.TOKEN_KEY_SWEEP_INTERVAL_MS,
    ...(runtime.config.EVENTSTORE_URL ? { orphansIn: runtime.store } : {}),
  });
