import { conflict, notFound } from '@tokenvault/platform';
import type { Decider } from '@tokenvault/cqrs';
import type { ApplicationType, Permission } from '@tokenvault/contracts';
import type { ContainerRuleData, TenancyEventOf } from './events.ts';

export type ApplicationEvent = TenancyEventOf<
  'ApplicationCreated' | 'ApplicationUpdated' | 'ApplicationDeleted'
>;

/** The whole application as decided: create and update responses are built from it. */
export interface ApplicationView {
  id: string;
  tenant_id: string;
  name: string;
  type: ApplicationType;
  permissions: Permission[];
  rules: ContainerRuleData[];
  created_by: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

export type ApplicationState =
  { status: 'absent' } | { status: 'active'; application: ApplicationView } | { status: 'deleted' };

interface Grants {
  name: string;
  permissions: Permission[];
  rules: ContainerRuleData[];
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
  | { type: 'DeleteApplication'; applicationId: string; tenantId: string; actorId: string; now: string };

const missing = () => notFound('No application with this id.');

export const applicationDecider: Decider<ApplicationState, ApplicationCommand, ApplicationEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'ApplicationCreated': {
        const d = event.data;
        return {
          status: 'active',
          application: {
            id: d.application_id,
            tenant_id: d.tenant_id,
            name: d.name,
            type: d.type,
            permissions: d.permissions,
            rules: d.rules,
            created_by: d.created_by,
            created_at: d.created_at,
          },
        };
      }
      case 'ApplicationUpdated': {
        if (state.status !== 'active') return state;
        const d = event.data;
        return {
          status: 'active',
          application: {
            ...state.application,
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
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateApplication':
        if (state.status !== 'absent') throw conflict('An application with this id exists.');
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
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      case 'UpdateApplication':
        if (state.status !== 'active') throw missing();
        return [
          {
            type: 'ApplicationUpdated',
            data: {
              application_id: command.applicationId,
              tenant_id: command.tenantId,
              name: command.name,
              permissions: command.permissions,
              rules: command.rules,
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      case 'DeleteApplication':
        if (state.status !== 'active') throw missing();
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
  },
};
