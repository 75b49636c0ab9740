import { startTokenKeySweeper } from '@tokenvault/tokens';
import type { Runtime } from './runtime.ts';

/** Destroys expired tokens' keys (one process at a time sweeps: run it in any, or several). */
export const startTokenKeySweeperOf = (runtime: Runtime) =>
  startTokenKeySweeper({
    pool: runtime.ownerPool,
    clock: runtime.clock,
    logger: runtime.logger,
    intervalMs: runtime.config.TOKEN_KEY_SWEEP_INTERVAL_MS,
  });
