export { reactorsMigrations } from './migrations.ts';
export { reactorInvalidationsOf, reactorsProjection } from './projections/reactors.ts';
export { formulaRoutes, type ReactorRouteDeps } from './http/formulas.ts';
export { reactorRoutes } from './http/reactors.ts';
export { formulaDecider } from './domain/formula.ts';
export { activeReactor } from './commands/reactors.ts';
export { assertMayBindReactor, type BoundReactor } from './domain/reactor.ts';
export { checkFormulaSyntax } from './domain/syntax.ts';
export { assertConfiguration } from './domain/configuration.ts';
export { castTo, findTokenExpressions, prepareArguments, substituteTokens } from './domain/arguments.ts';
export { reactorsEventTypes, type ReactorsEvent } from './domain/events.ts';
export { invocationRoutes } from './http/invoke.ts';
export { ReactorQueries } from './queries/reactors.ts';
export { ReactorDefinitions } from './queries/reactor-definitions.ts';
export { ReactorRunQueue, outcomeBody } from './runs/run-queue.ts';
export {
  principalData,
  reactorRunBase,
  type ReactorRunOutcome,
  type ReactorRunRequest,
} from './runs/run-messages.ts';
export { ReactorRunWorker } from './runs/run-worker.ts';
