import { alreadyExists, notAllowed, notFoundError } from '@tokenvault/platform';
import {
  assertActingApplication,
  assertMayChangeBound,
  type ActingApplication,
  type CallerGrants,
} from '@tokenvault/tenancy';
import type { Decider, EventOf } from '@tokenvault/cqrs';
import { assertConfiguration } from './configuration.ts';
import type { ReactorConfiguration, ReactorsEvent } from './reactors.events.ts';
import { formulaMissing, type FormulaState } from './formula.ts';

export type ReactorEvent = EventOf<ReactorsEvent, 'ReactorCreated' | 'ReactorUpdated' | 'ReactorDeleted'>;

/**
 * The reactor as decided (its configuration sealed): create and update responses are built from
 * it and the plaintext configuration the caller sent.
 */
export interface ReactorView {
  id: string;
  tenant_id: string;
  name: string;
  formula_id: string;
  configuration_ciphertext: string;
  application_id?: string;
  created_by: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

export type ReactorState =
  { status: 'absent' } | { status: 'active'; reactor: ReactorView } | { status: 'deleted' };

interface Target {
  reactorId: string;
  tenantId: string;
  actorId: string;
  now: string;
}

interface Settings {
  name: string;
  /** As sent: checked against the formula, never put in an event. */
  configuration: ReactorConfiguration;
  /** The same, sealed by the command handler before deciding: what the event holds. */
  configurationCiphertext: string;
  /** The application asked for, and what its context knows of it (undefined: not found). */
  application?: { id: string; found: ActingApplication | undefined };
  /** The reactor's formula, folded from its own stream. */
  formula: FormulaState;
  caller: CallerGrants;
}

export type ReactorCommand =
  | ({ type: 'CreateReactor'; formulaId: string } & Settings & Target)
  | ({
      type: 'UpdateReactor';
      /** The application the reactor runs as now, as tenancy knows it (undefined: none, or gone). */
      bound?: ActingApplication;
    } & Settings &
      Target)
  | ({
      type: 'DeleteReactor';
      caller: CallerGrants;
      /** The application the reactor runs as, as tenancy knows it (undefined: none, or gone). */
      bound?: ActingApplication;
    } & Target);

export const reactorMissing = () => notFoundError('No reactor with this id.');

/** An active reactor as another object binds it: the application it runs as (none: undefined). */
export interface BoundReactor {
  id: string;
  application?: ActingApplication;
}

/**
 * Whoever can make a bound reactor run (a proxy's callers; without auth, anyone with the proxy's
 * key) acts through it as its application, on data it detokenizes: binding one needs token:use,
 * as invoking it does, and nothing its application holds that the caller does not (not allowed,
 * on `field`). A reactor whose application is gone runs as none (its runs fail), so binds as one.
 */
export function assertMayBindReactor(caller: CallerGrants, reactor: BoundReactor, field: string): void {
  const holdsTokenUse =
    caller.permissions.includes('token:use') ||
    caller.rules.some((rule) => rule.permissions.includes('token:use'));
  if (!holdsTokenUse) {
    throw notAllowed(
      'Binding a reactor needs token:use, as invoking it does: whoever calls what it is bound to runs it.',
      { [field]: ['token:use is not held by this key'] },
    );
  }
  if (reactor.application) assertActingApplication('reactor', caller, reactor.application, field);
}

/**
 * The formula must exist, the application (if any) too, be public or private and hold nothing the
 * caller does not (whoever may invoke the reactor acts through its `svc` as that application, so
 * binding a greater application would be an escalation), and the configuration must fit.
 */
function checkSettings(settings: Settings): { application_id?: string } {
  if (settings.formula.status !== 'active') throw formulaMissing();
  const application = settings.application;
  if (application) {
    if (!application.found) throw notFoundError('No application with this id.');
    assertActingApplication('reactor', settings.caller, application.found, 'body.application.id');
  }
  assertConfiguration(settings.formula.formula.configuration, settings.configuration);
  return application ? { application_id: application.id } : {};
}

export const reactorDecider: Decider<ReactorState, ReactorCommand, ReactorEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'ReactorCreated': {
        const { reactor_id, ...rest } = event.data;
        return { status: 'active', reactor: { id: reactor_id, ...rest } };
      }
      case 'ReactorUpdated': {
        if (state.status !== 'active') return state;
        const d = event.data;
        const { application_id: _previous, ...kept } = state.reactor;
        return {
          status: 'active',
          reactor: {
            ...kept,
            name: d.name,
            configuration_ciphertext: d.configuration_ciphertext,
            ...(d.application_id === undefined ? {} : { application_id: d.application_id }),
            modified_by: d.modified_by,
            modified_at: d.modified_at,
          },
        };
      }
      case 'ReactorDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateReactor': {
        if (state.status !== 'absent') throw alreadyExists('A reactor with this id exists.');
        const application = checkSettings(command);
        return [
          {
            type: 'ReactorCreated',
            data: {
              reactor_id: command.reactorId,
              tenant_id: command.tenantId,
              name: command.name,
              formula_id: command.formulaId,
              configuration_ciphertext: command.configurationCiphertext,
              ...application,
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      }
      case 'UpdateReactor': {
        if (state.status !== 'active') throw reactorMissing();
        const application = checkSettings(command);
        // What it runs as now, too: `application: null` binds nothing, yet changes what runs as it.
        assertMayChangeBound('reactor', command.caller, command.bound);
        return [
          {
            type: 'ReactorUpdated',
            data: {
              reactor_id: command.reactorId,
              tenant_id: command.tenantId,
              name: command.name,
              configuration_ciphertext: command.configurationCiphertext,
              ...application,
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      }
      case 'DeleteReactor':
        if (state.status !== 'active') throw reactorMissing();
        assertMayChangeBound('reactor', command.caller, command.bound);
        return [
          {
            type: 'ReactorDeleted',
            data: {
              reactor_id: command.reactorId,
              tenant_id: command.tenantId,
              formula_id: state.reactor.formula_id,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
    }
  },
};
