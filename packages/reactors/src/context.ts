import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import type { CodeRunQueue } from '@tokenvault/code-runs';
import type { Detokenizer, TokenQueries } from '@tokenvault/tokens';
import { FormulaCommands, type FormulaCommandDeps } from './commands/formulas.commands.ts';
import { ReactorCommands, type ReactorCommandDeps } from './commands/reactors.commands.ts';
import { reactorsEventTypes } from './domain/reactors.events.ts';
import { formulaRoutes } from './http/formulas.routes.ts';
import { invocationRoutes } from './http/reactor-invoke.routes.ts';
import { reactorRoutes } from './http/reactors.routes.ts';
import { reactorsMigrations } from './migrations.ts';
import { reactorInvalidationsOf, reactorsProjection } from './projections/reactors.projection.ts';
import type { FormulaQueries } from './queries/formulas.queries.ts';
import type { ReactorQueries } from './queries/reactors.queries.ts';

/** What the reactors context's routes are built from: its commands' collaborators, its queries, its runs. */
export interface ReactorsContextDeps extends ReactorCommandDeps, Omit<FormulaCommandDeps, 'reactors'> {
  consistency: ReadModelConsistency;
  /** The process's reactor and formula queries (the formula commands count reactors with the first). */
  reactorQueries: ReactorQueries;
  formulaQueries: FormulaQueries;
  /** The process's queue of code runs (a worker pool, here or elsewhere, runs them). */
  reactorRuns: CodeRunQueue;
  /** Invocations one tenant may have in flight: REACTOR_MAX_CONCURRENT_PER_TENANT. */
  maxReactorInvocationsPerTenant: number;
  detokenizer: Detokenizer;
  /** The process's token queries: an async result is compared with its tokens as they are now. */
  tokenQueries: Pick<TokenQueries, 'getMany'>;
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
  // The context's composition step: its commands, built once from the process's collaborators.
  routes: (deps) => {
    const { consistency } = deps;
    const formulas = new FormulaCommands({
      store: deps.store,
      lockPool: deps.lockPool,
      reactors: deps.reactorQueries,
      applications: deps.applications,
      clock: deps.clock,
    });
    return [
      ...formulaRoutes({ commands: formulas, queries: deps.formulaQueries, consistency }),
      ...reactorRoutes({ commands: new ReactorCommands(deps), queries: deps.reactorQueries, consistency }),
      ...invocationRoutes({
        runs: deps.reactorRuns,
        detokenizer: deps.detokenizer,
        reactors: deps.reactorDefinitions,
        maxInFlightPerTenant: deps.maxReactorInvocationsPerTenant,
        tokens: deps.tokenQueries,
        applications: deps.applications,
        clock: deps.clock,
      }),
    ];
  },
};
