import { randomUUID } from 'node:crypto';
import { executeCommand, aggregateStream, metadataOf, type CommandOutcome } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { withAdvisoryLock, type Clock, type Pool, type Principal } from '@tokenvault/platform';
import type { ReactorFormulaBody } from '@tokenvault/contracts';
import { streams } from '../domain/events.ts';
import { formulaDecider, type FormulaEvent, type FormulaState, type FormulaView } from '../domain/formula.ts';
import type { ReactorQueries } from '../queries/reactors.ts';
import {
  actingGrantsNotHeld,
  actingGrantsNotHeldProblem,
  type ApplicationQueries,
} from '@tokenvault/tenancy';

/**
 * Creating a reactor on a formula and deleting the formula run one at a time under this lock, so
 * a delete never misses a reactor created at the same moment (creates hold it until the reactor
 * is in the read model the delete counts in).
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
  reactors: ReactorQueries;
  applications: ApplicationQueries;
  clock: Clock;
}

export class FormulaCommands {
  private readonly deps: FormulaCommandDeps;

  constructor(deps: FormulaCommandDeps) {
    this.deps = deps;
  }

  async create(principal: Principal, body: ReactorFormulaBody, correlationId: string) {
    const formulaId = randomUUID();
    const outcome = await executeCommand(
      this.deps.store,
      streams.formula(principal.tenantId, formulaId),
      formulaDecider,
      {
        type: 'CreateFormula',
        formulaId,
        tenantId: principal.tenantId,
        definition: body,
        actorId: principal.actorId,
        now: this.deps.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
      { newStream: true },
    );
    return { formula: viewOf(outcome), position: outcome.position };
  }

  /**
   * The new code runs as the applications of the reactors that use the formula: the caller must
   * hold everything they hold (403 on path.id), or the update would be an escalation.
   */
  async update(principal: Principal, formulaId: string, body: ReactorFormulaBody, correlationId: string) {
    const tenantId = principal.tenantId;
    const bound = await this.deps.applications.getMany(
      tenantId,
      await this.deps.reactors.applicationIdsUsingFormula(tenantId, formulaId),
    );
    const caller = { permissions: [...principal.permissions], rules: principal.rules };
    const notHeld = [...new Set(bound.flatMap((application) => actingGrantsNotHeld(caller, application)))];
    if (notHeld.length > 0) throw actingGrantsNotHeldProblem('reactor', 'path.id', notHeld);
    const outcome = await executeCommand(
      this.deps.store,
      streams.formula(principal.tenantId, formulaId),
      formulaDecider,
      {
        type: 'UpdateFormula',
        formulaId,
        tenantId: principal.tenantId,
        definition: body,
        actorId: principal.actorId,
        now: this.deps.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    return { formula: viewOf(outcome), position: outcome.position };
  }

  /** A formula that reactors still run is not deleted (409). */
  async delete(principal: Principal, formulaId: string, correlationId: string) {
    const tenantId = principal.tenantId;
    return withAdvisoryLock(this.deps.lockPool, formulaLock(tenantId, formulaId), async () => {
      const reactorsUsingIt = await this.deps.reactors.countUsingFormula(tenantId, formulaId);
      const outcome = await executeCommand(
        this.deps.store,
        streams.formula(tenantId, formulaId),
        formulaDecider,
        {
          type: 'DeleteFormula',
          formulaId,
          tenantId,
          reactorsUsingIt,
          actorId: principal.actorId,
          now: this.deps.clock.now().toISOString(),
        },
        metadataOf(principal, correlationId),
      );
      return { position: outcome.position };
    });
  }
}
