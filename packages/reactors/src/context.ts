import type { ContextManifest } from '@tokenvault/cqrs';
import { reactorsEventTypes } from './domain/reactors.events.ts';
import { formulaRoutes, type ReactorRouteDeps } from './http/formulas.routes.ts';
import { invocationRoutes } from './http/reactor-invoke.routes.ts';
import { reactorRoutes } from './http/reactors.routes.ts';
import { reactorsMigrations } from './migrations.ts';
import { reactorInvalidationsOf, reactorsProjection } from './projections/reactors.projection.ts';
import type { ReactorQueries } from './queries/reactors.queries.ts';
import type { CodeRunQueue } from '@tokenvault/code-runs';
import type { Detokenizer } from '@tokenvault/tokens';

export interface ReactorsContextDeps extends ReactorRouteDeps {
  /** The process's queue of code runs (a worker pool, here or elsewhere, runs them). */
  reactorRuns: CodeRunQueue;
  /** Invocations one tenant may have in flight: REACTOR_MAX_CONCURRENT_PER_TENANT. */
  maxReactorInvocationsPerTenant: number;
  detokenizer: Detokenizer;
  /** The process's cache of reactor definitions: read once, kept until a change evicts them. */
  reactorDefinitions: Pick<ReactorQueries, 'get'>;
}

/** What the reactors context contributes to the service (the runtime lists it in contexts.ts). */
export const reactorsContext: ContextManifest<ReactorsContextDeps> = {
  name: 'reactors',
  migrations: reactorsMigrations,
  projections: { consistent: [reactorsProjection], trailing: [] },
  effects: { inline: [], external: [] },
  invalidations: reactorInvalidationsOf,
  eventTypes: reactorsEventTypes,
  routes: (deps) => [
    ...formulaRoutes(deps),
    ...reactorRoutes(deps),
    ...invocationRoutes({
      runs: deps.reactorRuns,
      detokenizer: deps.detokenizer,
      reactors: deps.reactorDefinitions,
      maxInFlightPerTenant: deps.maxReactorInvocationsPerTenant,
    }),
  ],
};
