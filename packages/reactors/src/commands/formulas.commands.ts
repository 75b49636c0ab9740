import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  type CommandHandler,
  type CommandOutcome,
} from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { withAdvisoryLock, type Clock, type Pool, type Principal } from '@tokenvault/platform';
import type { ReactorFormulaBody } from '@tokenvault/contracts';
import { streams } from '../domain/reactors.events.ts';
import {
  formulaDecider,
  type FormulaCommand,
  type FormulaEvent,
  type FormulaState,
  type FormulaView,
  type ReactorRunningFormula,
} from '../domain/formula.ts';
import type { ReactorQueries } from '../queries/reactors.queries.ts';
import type { ApplicationQueries } from '@tokenvault/tenancy';

/**
 * Creating or updating a reactor on a formula, and updating or deleting the formula, run one at a
 * time under this lock, so that the formula's commands never miss a reactor written at the same
 * moment (reactor writes hold it until the reactor is in the read model they read): a delete
 * counts every reactor, an update checks the application of every one.
 */
export const formulaLock = (tenantId: string, formulaId: string) =>
  `reactor-formula:${tenantId}:${formulaId}`;

/** The formula as its own stream says (not the read model): what reactor commands decide on. */
export async function loadFormula(
  store: EventStore,
  tenantId: string,
  formulaId: string,
): Promise<FormulaState> {
  return (await aggregateStream(store, streams.formula(tenantId, formulaId), formulaDecider)).state;
}

function viewOf(outcome: CommandOutcome<FormulaState, FormulaEvent>): FormulaView {
  if (outcome.state.status !== 'active') throw new Error('the formula is not active after the command');
  return outcome.state.formula;
}

export interface FormulaCommandDeps {
  store: EventStore;
  /** The sessions of the formula's advisory lock (a small pool of their own). */
  lockPool: Pool;
  reactors: Pick<ReactorQueries, 'reactorsWithApplicationUsingFormula' | 'countUsingFormula'>;
  applications: Pick<ApplicationQueries, 'getMany'>;
  clock: Clock;
}

export class FormulaCommands {
  private readonly deps: FormulaCommandDeps;
  private readonly handle: CommandHandler<FormulaState, FormulaCommand, FormulaEvent>;

  constructor(deps: FormulaCommandDeps) {
    this.deps = deps;
    this.handle = commandHandler(deps.store, formulaDecider, (command) =>
      streams.formula(command.tenantId, command.formulaId),
    );
  }

  async create(principal: Principal, body: ReactorFormulaBody, correlationId: string) {
    const formulaId = randomUUID();
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      { type: 'CreateFormula', formulaId, definition: body, ...acting },
      metadata,
      { newStream: true },
    );
    return { formula: viewOf(outcome), position: outcome.position };
  }

  /** The new code runs as the applications of the formula's reactors: the decider checks them. */
  async update(principal: Principal, formulaId: string, body: ReactorFormulaBody, correlationId: string) {
    const tenantId = principal.tenantId;
    return withAdvisoryLock(this.deps.lockPool, formulaLock(tenantId, formulaId), async () => {
      const reactorsRunningIt = await this.reactorsRunning(tenantId, formulaId);
      const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
      const outcome = await this.handle(
        {
          type: 'UpdateFormula',
          formulaId,
          definition: body,
          reactorsRunningIt,
          caller: { permissions: [...principal.permissions], rules: principal.rules },
          ...acting,
        },
        metadata,
      );
      return { formula: viewOf(outcome), position: outcome.position };
    });
  }

  /** The formula's reactors bound to an application that exists (one gone runs as none). */
  private async reactorsRunning(tenantId: string, formulaId: string): Promise<ReactorRunningFormula[]> {
    const reactors = await this.deps.reactors.reactorsWithApplicationUsingFormula(tenantId, formulaId);
    const applications = await this.deps.applications.getMany(tenantId, [
      ...new Set(reactors.map((reactor) => reactor.application_id)),
    ]);
    return reactors.flatMap((reactor) => {
      const application = applications.find((found) => found.id === reactor.application_id);
      return application ? [{ id: reactor.id, application }] : [];
    });
  }

  /** A formula that reactors still run is not deleted (409). */
  async delete(principal: Principal, formulaId: string, correlationId: string) {
    const tenantId = principal.tenantId;
    return withAdvisoryLock(this.deps.lockPool, formulaLock(tenantId, formulaId), async () => {
      const reactorsUsingIt = await this.deps.reactors.countUsingFormula(tenantId, formulaId);
      const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
      const outcome = await this.handle(
        { type: 'DeleteFormula', formulaId, reactorsUsingIt, ...acting },
        metadata,
      );
      return { position: outcome.position };
    });
  }
}
