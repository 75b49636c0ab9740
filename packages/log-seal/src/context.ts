import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Pool } from '@tokenvault/platform';
import { logSealRoutes } from './http/routes.ts';
import { logSealMigrations } from './migrations.ts';
import type { SealSigner } from './seal.ts';

export interface LogSealContextDeps {
  appPool: Pool;
  ownerPool: Pool;
  store: EventStore;
  consistency: ReadModelConsistency;
  /** The seals' signer (LOG_SIGNING_KEY), or undefined. */
  logSigner: SealSigner | undefined;
}

/**
 * What the log-seal context contributes to the service (the runtime lists it in contexts.ts): its
 * tables and the proof routes. The sealer itself is a processor the projector role starts.
 */
export const logSealContext: ContextManifest<LogSealContextDeps> = {
  name: 'log-seal',
  migrations: logSealMigrations,
  projections: { consistent: [], trailing: [] },
  effects: { inline: [], external: [] },
  eventTypes: [],
  routes: (deps) => logSealRoutes({ ...deps, signer: deps.logSigner }),
};
