import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Pool } from '@tokenvault/platform';
import { logProofRoutes } from './http/log-proof.routes.ts';
import { verifiableLogMigrations } from './migrations.ts';
import type { LogSigningKey } from './tree-head.ts';

export interface VerifiableLogContextDeps {
  appPool: Pool;
  ownerPool: Pool;
  store: EventStore;
  consistency: ReadModelConsistency;
  /** The tree heads' signing key (LOG_SIGNING_KEY), or undefined. */
  logSigningKey: LogSigningKey | undefined;
}

/**
 * What the verifiable-log context contributes to the service (the runtime lists it in
 * contexts.ts): its tables and the proof routes. The tree-head signer itself is a processor the
 * projector role starts.
 */
export const verifiableLogContext: ContextManifest<VerifiableLogContextDeps> = {
  name: 'verifiable-log',
  formerNames: ['log-seal'],
  migrations: verifiableLogMigrations,
  projections: { consistent: [], trailing: [] },
  effects: { inline: [], external: [] },
  eventTypes: [],
  routes: (deps) => logProofRoutes({ ...deps, signingKey: deps.logSigningKey }),
};
