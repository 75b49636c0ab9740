import { conflict } from '@tokenvault/platform';
import type { Decider } from '@tokenvault/cqrs';
import type { TenancyEventOf, TenantSettings } from './events.ts';

export type TenantEvent = TenancyEventOf<'TenantCreated'>;
export type TenantState = { status: 'absent' } | { status: 'active'; ownerId: string };

export type TenantCommand = {
  type: 'CreateTenant';
  tenantId: string;
  name: string;
  ownerId: string;
  settings: TenantSettings;
  actorId: string;
  now: string;
};

export const tenantDecider: Decider<TenantState, TenantCommand, TenantEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (_state, event) => ({ status: 'active', ownerId: event.data.owner_id }),
  decide(command, state) {
    if (state.status !== 'absent') throw conflict('The tenant exists.');
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
  },
};
