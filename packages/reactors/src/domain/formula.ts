import { alreadyExists, conflictError, notFoundError, unprocessableCommand } from '@tokenvault/platform';
import type { Decider, EventOf } from '@tokenvault/cqrs';
import {
  actingGrantsNotHeld,
  actingGrantsNotHeldError,
  type ActingApplication,
  type CallerGrants,
} from '@tokenvault/tenancy';
import type { FormulaDefinition, ReactorsEvent } from './reactors.events.ts';
import { checkFormulaSyntax } from './formula-syntax.ts';

export type FormulaEvent = EventOf<
  ReactorsEvent,
  'ReactorFormulaCreated' | 'ReactorFormulaUpdated' | 'ReactorFormulaDeleted'
>;

/** The whole formula as decided: create and update responses are built from it. */
export interface FormulaView extends FormulaDefinition {
  id: string;
  tenant_id: string;
  created_by: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

export type FormulaState =
  { status: 'absent' } | { status: 'active'; formula: FormulaView } | { status: 'deleted' };

interface Target {
  formulaId: string;
  tenantId: string;
  actorId: string;
  now: string;
}

/** A reactor of the formula that runs as an application: new code runs as that application. */
export interface ReactorRunningFormula {
  id: string;
  application: ActingApplication;
}

export type FormulaCommand =
  | ({ type: 'CreateFormula'; definition: FormulaDefinition } & Target)
  | ({
      type: 'UpdateFormula';
      definition: FormulaDefinition;
      /** The tenant's reactors of this formula bound to an application (read under its lock). */
      reactorsRunningIt: readonly ReactorRunningFormula[];
      caller: CallerGrants;
    } & Target)
  /** `reactorsUsingIt`: how many reactors of the tenant run it (read under the formula's lock). */
  | ({ type: 'DeleteFormula'; reactorsUsingIt: number } & Target);

export const formulaMissing = () => notFoundError('No reactor formula with this id.');

/** Code that does not compile is refused when the formula is saved, never at invocation. */
function assertCompiles(code: string): void {
  const error = checkFormulaSyntax(code);
  if (error !== undefined) {
    throw unprocessableCommand('The formula code does not compile.', { 'body.code': [error] });
  }
}

/**
 * New code runs as the application of every reactor of the formula: the caller must hold
 * everything each of them holds, or the update would be an escalation (not allowed on path.id, naming
 * each reactor and what its application holds that the caller does not).
 */
function assertMayRunAs(reactors: readonly ReactorRunningFormula[], caller: CallerGrants): void {
  const notHeld = reactors.flatMap((reactor) =>
    actingGrantsNotHeld(caller, reactor.application).map((grant) => `reactor ${reactor.id}: ${grant}`),
  );
  if (notHeld.length > 0) throw actingGrantsNotHeldError('reactor', 'path.id', notHeld);
}

/** Optional fields only when present, so events and views never hold `undefined`. */
function definitionOf(definition: FormulaDefinition): FormulaDefinition {
  return {
    name: definition.name,
    ...(definition.description === undefined ? {} : { description: definition.description }),
    type: definition.type,
    code: definition.code,
    configuration: definition.configuration,
    request_parameters: definition.request_parameters,
  };
}

export const formulaDecider: Decider<FormulaState, FormulaCommand, FormulaEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'ReactorFormulaCreated': {
        const { formula_id, tenant_id, created_by, created_at, ...definition } = event.data;
        return {
          status: 'active',
          formula: { id: formula_id, tenant_id, ...definitionOf(definition), created_by, created_at },
        };
      }
      case 'ReactorFormulaUpdated': {
        if (state.status !== 'active') return state;
        const { formula_id: _id, tenant_id: _tenant, modified_by, modified_at, ...definition } = event.data;
        const { id, tenant_id, created_by, created_at } = state.formula;
        return {
          status: 'active',
          formula: {
            id,
            tenant_id,
            ...definitionOf(definition),
            created_by,
            created_at,
            modified_by,
            modified_at,
          },
        };
      }
      case 'ReactorFormulaDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateFormula':
        if (state.status !== 'absent') throw alreadyExists('A reactor formula with this id exists.');
        assertCompiles(command.definition.code);
        return [
          {
            type: 'ReactorFormulaCreated',
            data: {
              formula_id: command.formulaId,
              tenant_id: command.tenantId,
              ...definitionOf(command.definition),
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      case 'UpdateFormula':
        if (state.status !== 'active') throw formulaMissing();
        assertMayRunAs(command.reactorsRunningIt, command.caller);
        assertCompiles(command.definition.code);
        return [
          {
            type: 'ReactorFormulaUpdated',
            data: {
              formula_id: command.formulaId,
              tenant_id: command.tenantId,
              ...definitionOf(command.definition),
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      case 'DeleteFormula':
        if (state.status !== 'active') throw formulaMissing();
        if (command.reactorsUsingIt > 0) {
          throw conflictError(
            `${command.reactorsUsingIt} reactor(s) use this formula: delete them before the formula.`,
          );
        }
        return [
          {
            type: 'ReactorFormulaDeleted',
            data: {
              formula_id: command.formulaId,
              tenant_id: command.tenantId,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
    }
  },
};
