import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  type CommandHandler,
  type CommandOutcome,
  type ReadModelConsistency,
} from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { withAdvisoryLock, type Clock, type Pool, type Principal } from '@tokenvault/platform';
import type {
  ApplicationResponse,
  CreateReactorBody,
  PatchReactorBody,
  ReactorResponse,
  UpdateReactorBody,
} from '@tokenvault/contracts';
import type { ApplicationQueries } from '@tokenvault/tenancy';
import type { Vault } from '@tokenvault/vault';
import { configurationSubject, streams, type ReactorConfiguration } from '../domain/reactors.events.ts';
import type { FormulaState } from '../domain/formula.ts';
import {
  reactorDecider,
  reactorMissing,
  type ReactorCommand,
  type ReactorEvent,
  type ReactorState,
  type ReactorView,
} from '../domain/reactor.ts';
import { formulaLock, loadFormula } from './formulas.commands.ts';

/**
 * The reactor if it is active, as its own stream says (not the read model, which may lag): what
 * another context's commands decide on. Its application id is what it runs as (none: undefined).
 */
export async function activeReactor(
  store: EventStore,
  tenantId: string,
  reactorId: string,
): Promise<{ id: string; application_id?: string } | undefined> {
  const { state } = await aggregateStream(store, streams.reactor(tenantId, reactorId), reactorDecider);
  if (state.status !== 'active') return undefined;
  const { application_id } = state.reactor;
  return { id: reactorId, ...(application_id === undefined ? {} : { application_id }) };
}

export interface ReactorCommandDeps {
  store: EventStore;
  /** The sessions of the formula's advisory lock (a small pool of their own). */
  lockPool: Pool;
  consistency: Pick<ReadModelConsistency, 'writeReadable'>;
  applications: Pick<ApplicationQueries, 'getMany'>;
  /** Seals each configuration under the tenant's data key before it is decided on (a patch opens the kept one). */
  vault: Pick<Vault, 'encrypt' | 'decrypt'>;
  clock: Clock;
}

/** How long a create waits, holding its formula's lock, for the read model to have the reactor. */
const lockedWaitMs = 60_000;

type Application = NonNullable<ReactorResponse['application']>;

/** An application a reactor is asked to run as, and what tenancy knows of it (undefined: not found). */
interface RequestedApplication {
  id: string;
  found: ApplicationResponse | undefined;
}

const callerGrants = (principal: Principal) => ({
  permissions: [...principal.permissions],
  rules: principal.rules,
});

export class ReactorCommands {
  private readonly deps: ReactorCommandDeps;
  private readonly handle: CommandHandler<ReactorState, ReactorCommand, ReactorEvent>;

  constructor(deps: ReactorCommandDeps) {
    this.deps = deps;
    this.handle = commandHandler(deps.store, reactorDecider, (command) =>
      streams.reactor(command.tenantId, command.reactorId),
    );
  }

  /** The application asked for, as tenancy knows it (of this tenant only). */
  private async application(
    tenantId: string,
    reference: { id: string } | undefined,
  ): Promise<RequestedApplication | undefined> {
    if (!reference) return undefined;
    const [found] = await this.deps.applications.getMany(tenantId, [reference.id]);
    return { id: reference.id, found };
  }

  /** The configuration as the events and the read model hold it: sealed for this reactor. */
  private seal(tenantId: string, reactorId: string, configuration: ReactorConfiguration) {
    return this.deps.vault.encrypt(tenantId, configurationSubject(reactorId), configuration);
  }

  /**
   * The response, from the decided reactor, the formula and application it was decided on, and
   * the configuration the caller sent (the decided reactor holds it sealed only).
   */
  private responseOf(
    outcome: CommandOutcome<ReactorState, ReactorEvent>,
    formula: FormulaState,
    application: { found: ApplicationResponse | undefined } | undefined,
    configuration: ReactorConfiguration,
  ): ReactorResponse {
    if (outcome.state.status !== 'active' || formula.status !== 'active')
      throw new Error('the reactor is not active after the command');
    const {
      formula_id: _formula,
      application_id: _application,
      configuration_ciphertext: _sealed,
      ...reactor
    } = outcome.state.reactor;
    return {
      ...reactor,
      configuration,
      formula: formula.formula,
      ...(application?.found
        ? {
            application: {
              id: application.found.id,
              name: application.found.name,
              type: application.found.type,
            } satisfies Application,
          }
        : {}),
    };
  }

  async create(principal: Principal, body: CreateReactorBody, correlationId: string) {
    const tenantId = principal.tenantId;
    const application = await this.application(tenantId, body.application);
    const reactorId = randomUUID();
    // Sealed before the formula's lock is taken: the lock is held no longer than it was.
    const configurationCiphertext = await this.seal(tenantId, reactorId, body.configuration);
    return this.write(principal, reactorId, body.formula.id, correlationId, {
      command: { type: 'CreateReactor', formulaId: body.formula.id },
      name: body.name,
      configuration: body.configuration,
      configurationCiphertext,
      application,
    });
  }

  /** The reactor as its own stream has it now; a 404 when it is not active. */
  private async current(tenantId: string, reactorId: string): Promise<ReactorView> {
    const { state } = await aggregateStream(
      this.deps.store,
      streams.reactor(tenantId, reactorId),
      reactorDecider,
    );
    if (state.status !== 'active') throw reactorMissing();
    return state.reactor;
  }

  /** The application the reactor runs as now, as tenancy knows it: an update needs what it holds too. */
  private async bound(tenantId: string, current: ReactorView): Promise<{ bound?: ApplicationResponse }> {
    if (current.application_id === undefined) return {};
    const [found] = await this.deps.applications.getMany(tenantId, [current.application_id]);
    return found ? { bound: found } : {};
  }

  /** Name, configuration (checked against the formula as it is now) and application; never the formula. */
  async update(principal: Principal, reactorId: string, body: UpdateReactorBody, correlationId: string) {
    const tenantId = principal.tenantId;
    const current = await this.current(tenantId, reactorId);
    const application = await this.application(tenantId, body.application);
    const configurationCiphertext = await this.seal(tenantId, reactorId, body.configuration);
    return this.write(principal, reactorId, current.formula_id, correlationId, {
      command: { type: 'UpdateReactor', ...(await this.bound(tenantId, current)) },
      name: body.name,
      configuration: body.configuration,
      configurationCiphertext,
      application,
    });
  }

  /**
   * A merge patch: the fields named change (`application: null` unbinds it, a configuration given
   * replaces the whole one), and the result is decided as a PUT of the whole reactor would be. So
   * the application it keeps is checked against the caller too: a key that could not bind that
   * application cannot rename the reactor, or change its configuration, either. An application
   * deleted since is not kept (the reactor already runs as none).
   */
  async patch(principal: Principal, reactorId: string, body: PatchReactorBody, correlationId: string) {
    const tenantId = principal.tenantId;
    const current = await this.current(tenantId, reactorId);
    const configuration =
      body.configuration ??
      ((await this.deps.vault.decrypt(
        tenantId,
        configurationSubject(reactorId),
        current.configuration_ciphertext,
      )) as ReactorConfiguration);
    const configurationCiphertext = body.configuration
      ? await this.seal(tenantId, reactorId, body.configuration)
      : current.configuration_ciphertext;
    let application: RequestedApplication | undefined;
    if (body.application) application = await this.application(tenantId, body.application);
    else if (body.application === undefined && current.application_id !== undefined) {
      const kept = await this.application(tenantId, { id: current.application_id });
      if (kept?.found) application = kept;
    }
    return this.write(principal, reactorId, current.formula_id, correlationId, {
      command: { type: 'UpdateReactor', ...(await this.bound(tenantId, current)) },
      name: body.name ?? current.name,
      configuration,
      configurationCiphertext,
      application,
    });
  }

  /**
   * A create or an update, under the formula's lock held until the read model has the reactor: a
   * formula command waiting for the lock then sees it as written (a delete counts it, an update
   * checks the application it runs as).
   */
  private write(
    principal: Principal,
    reactorId: string,
    formulaId: string,
    correlationId: string,
    write: {
      command:
        { type: 'CreateReactor'; formulaId: string } | { type: 'UpdateReactor'; bound?: ApplicationResponse };
      name: string;
      configuration: ReactorConfiguration;
      configurationCiphertext: string;
      application: RequestedApplication | undefined;
    },
  ) {
    const tenantId = principal.tenantId;
    const { command, application, ...settings } = write;
    return withAdvisoryLock(this.deps.lockPool, formulaLock(tenantId, formulaId), async () => {
      const formula = await loadFormula(this.deps.store, tenantId, formulaId);
      const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
      const outcome = await this.handle(
        {
          ...command,
          reactorId,
          formula,
          ...settings,
          ...(application ? { application } : {}),
          caller: callerGrants(principal),
          ...acting,
        },
        metadata,
        command.type === 'CreateReactor' ? { newStream: true } : {},
      );
      await this.deps.consistency.writeReadable(outcome.position!, lockedWaitMs);
      return {
        reactor: this.responseOf(outcome, formula, application, settings.configuration),
        position: outcome.position,
      };
    });
  }

  async delete(principal: Principal, reactorId: string, correlationId: string) {
    const bound = await this.bound(principal.tenantId, await this.current(principal.tenantId, reactorId));
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      { type: 'DeleteReactor', reactorId, caller: callerGrants(principal), ...bound, ...acting },
      metadata,
    );
    return { position: outcome.position };
  }
}
