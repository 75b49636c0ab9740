import { alreadyExists, notFoundError, unprocessableCommand } from '@tokenvault/platform';
import type { Decider, EventOf } from '@tokenvault/cqrs';
import type { TenancyEvent } from './tenancy.events.ts';

export type MemberRole = 'OWNER' | 'ADMIN';
export type MemberEvent = EventOf<TenancyEvent, 'MemberAdded' | 'MemberRemoved'>;
export type MemberState =
  | { status: 'absent' }
  | { status: 'active'; userId: string; role: MemberRole; createdAt: string; createdBy: string }
  | { status: 'removed' };

export type MemberCommand =
  | {
      type: 'AddMember';
      memberId: string;
      tenantId: string;
      userId: string;
      role: MemberRole;
      actorId: string;
      now: string;
    }
  | { type: 'RemoveMember'; memberId: string; tenantId: string; actorId: string; now: string };

export const memberDecider: Decider<MemberState, MemberCommand, MemberEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(_state, event) {
    switch (event.type) {
      case 'MemberAdded':
        return {
          status: 'active',
          userId: event.data.user_id,
          role: event.data.role,
          createdAt: event.data.created_at,
          createdBy: event.data.created_by,
        };
      case 'MemberRemoved':
        return { status: 'removed' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'AddMember':
        // A member id is never reused: a removed member's stream stays closed.
        if (state.status !== 'absent') throw alreadyExists('The member exists.');
        return [
          {
            type: 'MemberAdded',
            data: {
              member_id: command.memberId,
              tenant_id: command.tenantId,
              user_id: command.userId,
              role: command.role,
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      case 'RemoveMember':
        if (state.status !== 'active') throw notFoundError('No member with this id.');
        if (state.role === 'OWNER') throw unprocessableCommand('The OWNER member cannot be deleted.');
        return [
          {
            type: 'MemberRemoved',
            data: {
              member_id: command.memberId,
              tenant_id: command.tenantId,
              user_id: state.userId,
              removed_by: command.actorId,
              removed_at: command.now,
            },
          },
        ];
    }
  },
};
