import { alreadyExists, notFoundError } from '@tokenvault/platform';
import type { Decider, EventOf } from '@tokenvault/cqrs';
import type { TenancyEvent, TenantSettings } from './tenancy.events.ts';

export type TenantEvent = EventOf<TenancyEvent, 'TenantCreated' | 'TenantUpdated' | 'TenantDeleted'>;

/** The tenant as decided: update responses are built from it. */
export interface TenantView {
  id: string;
  owner_id: string;
  name: string;
  settings: TenantSettings;
  created_by: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

export type TenantState =
  { status: 'absent' } | { status: 'active'; tenant: TenantView } | { status: 'deleted' };

export type TenantCommand =
  | {
      type: 'CreateTenant';
      tenantId: string;
      name: string;
      ownerId: string;
      settings: TenantSettings;
      actorId: string;
      now: string;
    }
  | {
      type: 'UpdateTenant';
      tenantId: string;
      name: string;
      settings?: TenantSettings;
      actorId: string;
      now: string;
    }
  | { type: 'DeleteTenant'; tenantId: string; actorId: string; now: string };

export const tenantDecider: Decider<TenantState, TenantCommand, TenantEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'TenantCreated': {
        const { tenant_id, ...rest } = event.data;
        return { status: 'active', tenant: { id: tenant_id, ...rest } };
      }
      case 'TenantUpdated':
        if (state.status !== 'active') return state;
        return {
          status: 'active',
          tenant: {
            ...state.tenant,
            name: event.data.name,
            settings: event.data.settings,
            modified_by: event.data.modified_by,
            modified_at: event.data.modified_at,
          },
        };
      case 'TenantDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateTenant':
        if (state.status !== 'absent') throw alreadyExists('The tenant exists.');
        return [
          {
            type: 'TenantCreated',
            data: {
              tenant_id: command.tenantId,
              name: command.name,
              owner_id: command.ownerId,
              settings: command.settings,
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      case 'UpdateTenant': {
        if (state.status !== 'active') throw notFoundError('No such tenant.');
        // Settings left out of an update keep their values.
        const settings = { ...state.tenant.settings, ...command.settings };
        // PUT is idempotent: the same name and settings again change nothing, so concurrent
        // identical updates do not queue behind each other.
        const unchanged =
          command.name === state.tenant.name &&
          Object.entries(settings).every(
            ([name, value]) => state.tenant.settings[name as keyof TenantSettings] === value,
          );
        if (unchanged) return [];
        return [
          {
            type: 'TenantUpdated',
            data: {
              tenant_id: command.tenantId,
              name: command.name,
              settings,
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      }
      case 'DeleteTenant':
        if (state.status !== 'active') throw notFoundError('No such tenant.');
        return [
          {
            type: 'TenantDeleted',
            data: { tenant_id: command.tenantId, deleted_by: command.actorId, deleted_at: command.now },
          },
        ];
    }
  },
};
