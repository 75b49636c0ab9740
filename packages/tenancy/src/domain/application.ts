import { alreadyExists, conflictError, invalidCommand, notFoundError } from '@tokenvault/platform';
import type { Decider, EventOf } from '@tokenvault/cqrs';
import {
  grantsTypeMayNotHold,
  type ApplicationType,
  type Permission,
  type RateLimit,
} from '@tokenvault/contracts';
import type { ContainerRuleData, TenancyEvent } from './tenancy.events.ts';
import {
  grantsNotHeld,
  grantsNotHeldError,
  quotaNotHeld,
  quotaOf,
  keyExpiryOf,
  type ApplicationCaller,
} from './grant-rule.ts';

export type ApplicationEvent = EventOf<
  TenancyEvent,
  | 'ApplicationCreated'
  | 'ApplicationUpdated'
  | 'ApplicationDeleted'
  | 'ApplicationKeyCreated'
  | 'ApplicationKeyDeleted'
>;

/** The whole application as decided: create and update responses are built from it. */
export interface ApplicationView {
  id: string;
  tenant_id: string;
  name: string;
  type: ApplicationType;
  permissions: Permission[];
  rules: ContainerRuleData[];
  rate_limit?: RateLimit;
  created_by: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

/** One of an application's keys as decided: never the key, nor its digest. */
export interface ApplicationKeyView {
  id: string;
  /** From this instant on the key is refused; absent: it never expires. */
  expires_at?: string;
  created_by: string;
  created_at: string;
}

export type ApplicationState =
  | { status: 'absent' }
  | { status: 'active'; application: ApplicationView; keys: ApplicationKeyView[] }
  | { status: 'deleted' };

/**
 * The id of the key an application is created with (its ApplicationCreated carries its digest):
 * the application's own id, so that keys created before applications had several keep one stable
 * id, which the read model's migration can give them too (docs/decisions.md).
 */
export const firstKeyIdOf = (applicationId: string) => applicationId;

/** The most keys an application holds at once: enough to rotate and to give each deployment its own. */
export const maxKeysPerApplication = 20;

interface Grants {
  name: string;
  permissions: Permission[];
  rules: ContainerRuleData[];
  rateLimit?: RateLimit;
  /** What the caller's own application holds: it may grant no more (see grantsNotHeld). */
  caller: ApplicationCaller;
}

export type ApplicationCommand =
  | ({
      type: 'CreateApplication';
      applicationId: string;
      tenantId: string;
      applicationType: ApplicationType;
      keyHash: string;
      actorId: string;
      now: string;
    } & Grants)
  | ({
      type: 'UpdateApplication';
      applicationId: string;
      tenantId: string;
      actorId: string;
      now: string;
    } & Grants)
  | {
      type: 'DeleteApplication';
      applicationId: string;
      tenantId: string;
      caller: ApplicationCaller;
      actorId: string;
      now: string;
    }
  | {
      type: 'CreateApplicationKey';
      applicationId: string;
      tenantId: string;
      keyId: string;
      /** SHA-256 of the new key, which the command handler generated and answers once. */
      keyHash: string;
      expiresAt?: string;
      caller: ApplicationCaller;
      actorId: string;
      now: string;
    }
  | {
      type: 'DeleteApplicationKey';
      applicationId: string;
      tenantId: string;
      keyId: string;
      caller: ApplicationCaller;
      actorId: string;
      now: string;
    };

export const applicationMissing = () => notFoundError('No application with this id.');
const keyMissing = () => notFoundError('The application has no key with this id.');

/** The create body checks this for a new application; an update is checked against its type here. */
function typeMayHoldGrants(type: ApplicationType, grants: Pick<Grants, 'permissions' | 'rules'>) {
  const errors: Record<string, string[]> = {};
  for (const { path, message } of grantsTypeMayNotHold(type, grants)) {
    (errors[`body.${path.join('.')}`] ??= []).push(message);
  }
  if (Object.keys(errors).length > 0) {
    throw invalidCommand('The request is not valid; see errors for each field.', errors);
  }
}

/** The quota a create or update asks for (none: the service default) must be held by the caller. */
function requestedQuotaNotHeld(command: Grants) {
  const quota = quotaOf(command.rateLimit, command.caller.serviceDefaultPerMinute);
  return quotaNotHeld(command.caller, quota, 'body.rate_limit.requests_per_minute');
}

/** What an existing application holds that the caller does not: only what it could have created is its to change. */
function targetNotHeld(caller: ApplicationCaller, application: ApplicationView): string[] {
  const quota = quotaOf(application.rate_limit, caller.serviceDefaultPerMinute);
  return [
    ...Object.values(grantsNotHeld(caller, application, 'path.id')).flat(),
    ...Object.values(quotaNotHeld(caller, quota, 'path.id')).flat(),
  ];
}

export const applicationDecider: Decider<ApplicationState, ApplicationCommand, ApplicationEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'ApplicationCreated': {
        const d = event.data;
        return {
          status: 'active',
          keys: [
            {
              id: firstKeyIdOf(d.application_id),
              ...(d.key_expires_at === undefined ? {} : { expires_at: d.key_expires_at }),
              created_by: d.created_by,
              created_at: d.created_at,
            },
          ],
          application: {
            id: d.application_id,
            tenant_id: d.tenant_id,
            name: d.name,
            type: d.type,
            permissions: d.permissions,
            rules: d.rules,
            ...(d.rate_limit ? { rate_limit: d.rate_limit } : {}),
            created_by: d.created_by,
            created_at: d.created_at,
          },
        };
      }
      case 'ApplicationUpdated': {
        if (state.status !== 'active') return state;
        const d = event.data;
        const { rate_limit: _previous, ...rest } = state.application;
        return {
          status: 'active',
          keys: state.keys,
          application: {
            ...rest,
            ...(d.rate_limit ? { rate_limit: d.rate_limit } : {}),
            name: d.name,
            permissions: d.permissions,
            rules: d.rules,
            modified_by: d.modified_by,
            modified_at: d.modified_at,
          },
        };
      }
      case 'ApplicationDeleted':
        return { status: 'deleted' };
      case 'ApplicationKeyCreated': {
        if (state.status !== 'active') return state;
        const d = event.data;
        const key: ApplicationKeyView = {
          id: d.key_id,
          ...(d.expires_at === undefined ? {} : { expires_at: d.expires_at }),
          created_by: d.created_by,
          created_at: d.created_at,
        };
        return { ...state, keys: [...state.keys, key] };
      }
      case 'ApplicationKeyDeleted': {
        if (state.status !== 'active') return state;
        return { ...state, keys: state.keys.filter((key) => key.id !== event.data.key_id) };
      }
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateApplication': {
        if (state.status !== 'absent') throw alreadyExists('An application with this id exists.');
        const notHeld = {
          ...grantsNotHeld(command.caller, {
            type: command.applicationType,
            permissions: command.permissions,
            rules: command.rules,
          }),
          ...requestedQuotaNotHeld(command),
        };
        if (Object.keys(notHeld).length > 0) throw grantsNotHeldError(notHeld);
        // Its first key expires with the caller's: no key outlives the key that minted it.
        const keyExpiresAt = keyExpiryOf(command.caller, undefined, 'body');
        return [
          {
            type: 'ApplicationCreated',
            data: {
              application_id: command.applicationId,
              tenant_id: command.tenantId,
              name: command.name,
              type: command.applicationType,
              permissions: command.permissions,
              rules: command.rules,
              key_hash: command.keyHash,
              ...(keyExpiresAt === undefined ? {} : { key_expires_at: keyExpiresAt }),
              ...(command.rateLimit ? { rate_limit: command.rateLimit } : {}),
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      }
      case 'UpdateApplication': {
        if (state.status !== 'active') throw applicationMissing();
        const type = state.application.type;
        // A lesser key neither raises an application above itself nor strips one that holds more.
        const current = targetNotHeld(command.caller, state.application);
        if (current.length > 0) throw grantsNotHeldError({ 'path.id': current });
        const notHeld = {
          ...grantsNotHeld(
            command.caller,
            { type, permissions: command.permissions, rules: command.rules },
            'path.id',
          ),
          ...requestedQuotaNotHeld(command),
        };
        if (Object.keys(notHeld).length > 0) throw grantsNotHeldError(notHeld);
        typeMayHoldGrants(type, command);
        return [
          {
            type: 'ApplicationUpdated',
            data: {
              application_id: command.applicationId,
              tenant_id: command.tenantId,
              name: command.name,
              permissions: command.permissions,
              rules: command.rules,
              ...(command.rateLimit ? { rate_limit: command.rateLimit } : {}),
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      }
      case 'DeleteApplication': {
        if (state.status !== 'active') throw applicationMissing();
        // Only what the caller could have created: a lesser key never removes a greater one.
        const notHeld = targetNotHeld(command.caller, state.application);
        if (notHeld.length > 0) throw grantsNotHeldError({ 'path.id': notHeld });
        return [
          {
            type: 'ApplicationDeleted',
            data: {
              application_id: command.applicationId,
              tenant_id: command.tenantId,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
      }
      case 'CreateApplicationKey': {
        if (state.status !== 'active') throw applicationMissing();
        // A key acts as its application: minting one for an application that holds what the
        // caller does not would hand the caller those grants (a lesser key minting a greater one).
        const notHeld = targetNotHeld(command.caller, state.application);
        if (notHeld.length > 0) throw grantsNotHeldError({ 'path.id': notHeld });
        if (command.expiresAt !== undefined && Date.parse(command.expiresAt) <= Date.parse(command.now)) {
          throw invalidCommand('A key cannot be created expired.', {
            'body.expires_at': ['Must be later than now (ISO 8601 with an offset)'],
          });
        }
        // No key outlives the key that minted it: none asked for takes the caller's own expiry.
        const expiresAt = keyExpiryOf(command.caller, command.expiresAt, 'body.expires_at');
        if (state.keys.length >= maxKeysPerApplication) {
          throw conflictError(
            `The application holds ${maxKeysPerApplication} keys, the most it may: delete one it no longer uses first.`,
          );
        }
        return [
          {
            type: 'ApplicationKeyCreated',
            data: {
              application_id: command.applicationId,
              tenant_id: command.tenantId,
              key_id: command.keyId,
              key_hash: command.keyHash,
              ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      }
      case 'DeleteApplicationKey': {
        if (state.status !== 'active') throw applicationMissing();
        // Only what the caller could have created: a lesser key never revokes a greater one's keys.
        const notHeld = targetNotHeld(command.caller, state.application);
        if (notHeld.length > 0) throw grantsNotHeldError({ 'path.id': notHeld });
        if (!state.keys.some((key) => key.id === command.keyId)) throw keyMissing();
        return [
          {
            type: 'ApplicationKeyDeleted',
            data: {
              application_id: command.applicationId,
              tenant_id: command.tenantId,
              key_id: command.keyId,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
      }
    }
  },
};
