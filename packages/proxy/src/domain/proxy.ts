import type { DataOf, Decider, EventOf } from '@tokenvault/cqrs';
import { alreadyExists, invalidCommand, notAllowed, notFoundError } from '@tokenvault/platform';
import { assertMayBindReactor, type BoundReactor } from '@tokenvault/reactors';
import {
  assertActingApplication,
  assertMayChangeBound,
  type ActingApplication,
  type CallerGrants,
} from '@tokenvault/tenancy';
import type { ProxyTransform } from '../queries/configured-proxy.queries.ts';
import type { ProxiesEvent } from './proxy.events.ts';

export type ProxyEvent = EventOf<ProxiesEvent, 'ProxyCreated' | 'ProxyUpdated' | 'ProxyDeleted'>;

/** The proxy as decided (its configuration and key sealed): the created fact, and its last update. */
export type ProxyView = Omit<DataOf<ProxiesEvent, 'ProxyCreated'>, 'proxy_id'> & {
  id: string;
  modified_by?: string;
  modified_at?: string;
};

export type ProxyState =
  { status: 'absent' } | { status: 'active'; proxy: ProxyView } | { status: 'deleted' };

/** A proxy's settings as the caller asked for them (after a patch: merged with the current ones). */
export interface ProxySettings {
  name: string;
  /** Already checked against the destination rules by the command handler (it resolves names). */
  destination_url: string;
  request_reactor_id?: string;
  response_reactor_id?: string;
  request_transforms: ProxyTransform[];
  response_transforms: ProxyTransform[];
  require_auth: boolean;
  timeout?: number;
}

interface Target {
  proxyId: string;
  tenantId: string;
  actorId: string;
  now: string;
}

interface Decision {
  settings: ProxySettings;
  /** The configuration, sealed by the command handler: the plaintext never reaches the decider. */
  configurationCiphertext: string;
  /** The application asked for, and what tenancy knows of it (undefined: not found). */
  application?: { id: string; found: ActingApplication | undefined };
  /**
   * The reactors named (request and response) that are active reactors of the tenant, each with
   * the application it runs as, as tenancy knows it.
   */
  reactorsFound: readonly BoundReactor[];
  caller: CallerGrants;
  /** When the caller's own API key expires (absent: never, or a member's session). */
  callerKeyExpiresAt?: string;
}

export type ProxyCommand =
  | ({ type: 'CreateProxy'; keyCiphertext: string; keyHash: string } & Decision & Target)
  | ({
      type: 'UpdateProxy';
      /**
       * What the proxy runs now: its application and its reactors (each with the application it
       * runs as), as tenancy knows them. A change of the proxy needs what they hold too.
       */
      bound: { application?: ActingApplication; reactors: readonly BoundReactor[] };
    } & Decision &
      Target)
  | ({
      type: 'DeleteProxy';
      caller: CallerGrants;
      /** What the proxy runs (its application, its reactors), as for an update. */
      bound: { application?: ActingApplication; reactors: readonly BoundReactor[] };
    } & Target);

export const proxyMissing = () => notFoundError('No proxy with this id.');

/**
 * Whoever holds a proxy's key (without auth: anyone) acts through its stages: its reactors as
 * their applications, its transforms as its own. Binding them must not give the caller more than
 * it holds, and every decision checks the whole proxy (a PATCH too: a key that could not bind
 * what the proxy runs cannot change the proxy either).
 */
function checkDecision(decision: Decision): { application_id?: string } {
  const { settings, application } = decision;
  for (const field of ['request_reactor_id', 'response_reactor_id'] as const) {
    const id = settings[field];
    if (id === undefined) continue;
    const reactor = decision.reactorsFound.find((found) => found.id === id);
    if (!reactor) {
      throw invalidCommand('The proxy names a reactor that does not exist.', {
        [`body.${field}`]: ['No reactor with this id'],
      });
    }
    assertMayBindReactor(decision.caller, reactor, `body.${field}`);
  }
  if (!application) return {};
  if (!application.found) {
    throw invalidCommand('The proxy names an application that does not exist.', {
      'body.application.id': ['No application with this id'],
    });
  }
  assertActingApplication('proxy', decision.caller, application.found, 'body.application.id');
  return { application_id: application.id };
}

/**
 * Changing or deleting a proxy needs what it runs now (its reactors, its application): the
 * assertions of binding them, on `path.id`.
 */
function assertMayChangeWhatRuns(
  caller: CallerGrants,
  bound: { application?: ActingApplication; reactors: readonly BoundReactor[] },
): void {
  for (const reactor of bound.reactors) assertMayBindReactor(caller, reactor, 'path.id');
  assertMayChangeBound('proxy', caller, bound.application);
}

/**
 * A proxy without auth is called with its proxy key alone, which never expires: made by a key
 * that expires, it would be a key outliving the key that minted it (docs/applications.md, "A
 * key's expiry bounds its holder"). So an expiring key neither creates one nor turns auth off.
 */
function assertNoKeyOutlivesCaller(decision: Decision, requiredAuthBefore: boolean): void {
  const expiresAt = decision.callerKeyExpiresAt;
  if (expiresAt === undefined || decision.settings.require_auth || !requiredAuthBefore) return;
  throw notAllowed(
    'A key that expires cannot make a proxy callable without an API key: its proxy key would outlive the key that made it.',
    { 'body.require_auth': [`Must be true for a key that expires (this one at ${expiresAt})`] },
  );
}

/** The optional settings, written out only when set. */
const optionalSettings = (settings: ProxySettings) => ({
  ...(settings.request_reactor_id === undefined ? {} : { request_reactor_id: settings.request_reactor_id }),
  ...(settings.response_reactor_id === undefined
    ? {}
    : { response_reactor_id: settings.response_reactor_id }),
  ...(settings.timeout === undefined ? {} : { timeout: settings.timeout }),
});

export const proxyDecider: Decider<ProxyState, ProxyCommand, ProxyEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'ProxyCreated': {
        const { proxy_id, ...rest } = event.data;
        return { status: 'active', proxy: { id: proxy_id, ...rest } };
      }
      case 'ProxyUpdated': {
        if (state.status !== 'active') return state;
        const d = event.data;
        const { id, tenant_id, key_ciphertext, key_hash, created_by, created_at } = state.proxy;
        return {
          status: 'active',
          proxy: {
            id,
            tenant_id,
            name: d.name,
            destination_url: d.destination_url,
            ...(d.request_reactor_id === undefined ? {} : { request_reactor_id: d.request_reactor_id }),
            ...(d.response_reactor_id === undefined ? {} : { response_reactor_id: d.response_reactor_id }),
            request_transforms: d.request_transforms,
            response_transforms: d.response_transforms,
            ...(d.application_id === undefined ? {} : { application_id: d.application_id }),
            configuration_ciphertext: d.configuration_ciphertext,
            key_ciphertext,
            key_hash,
            require_auth: d.require_auth,
            ...(d.timeout === undefined ? {} : { timeout: d.timeout }),
            created_by,
            created_at,
            modified_by: d.modified_by,
            modified_at: d.modified_at,
          },
        };
      }
      case 'ProxyDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateProxy': {
        if (state.status !== 'absent') throw alreadyExists('A proxy with this id exists.');
        const application = checkDecision(command);
        assertNoKeyOutlivesCaller(command, true);
        const s = command.settings;
        return [
          {
            type: 'ProxyCreated',
            data: {
              proxy_id: command.proxyId,
              tenant_id: command.tenantId,
              name: s.name,
              destination_url: s.destination_url,
              request_transforms: s.request_transforms,
              response_transforms: s.response_transforms,
              ...optionalSettings(s),
              ...application,
              configuration_ciphertext: command.configurationCiphertext,
              key_ciphertext: command.keyCiphertext,
              key_hash: command.keyHash,
              require_auth: s.require_auth,
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      }
      case 'UpdateProxy': {
        if (state.status !== 'active') throw proxyMissing();
        const application = checkDecision(command);
        // What it runs now, too: unbinding (`null`, or a PUT without it) binds nothing, yet
        // changes what runs as a greater application.
        assertMayChangeWhatRuns(command.caller, command.bound);
        assertNoKeyOutlivesCaller(command, state.proxy.require_auth);
        const s = command.settings;
        return [
          {
            type: 'ProxyUpdated',
            data: {
              proxy_id: command.proxyId,
              tenant_id: command.tenantId,
              name: s.name,
              destination_url: s.destination_url,
              request_transforms: s.request_transforms,
              response_transforms: s.response_transforms,
              ...optionalSettings(s),
              ...application,
              configuration_ciphertext: command.configurationCiphertext,
              require_auth: s.require_auth,
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      }
      case 'DeleteProxy':
        if (state.status !== 'active') throw proxyMissing();
        assertMayChangeWhatRuns(command.caller, command.bound);
        return [
          {
            type: 'ProxyDeleted',
            data: {
              proxy_id: command.proxyId,
              tenant_id: command.tenantId,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
    }
  },
};
