import { conflict } from '@tokenvault/platform';
import type { Decider } from '@tokenvault/cqrs';
import type { TenancyEventOf } from './events.ts';

export type MemberEvent = TenancyEventOf<'MemberAdded'>;
export type MemberState = { status: 'absent' | 'active' };
export type MemberCommand = {
  type: 'AddMember';
  memberId: string;
  tenantId: string;
  userId: string;
  role: 'OWNER' | 'ADMIN';
  actorId: string;
  now: string;
};

export const memberDecider: Decider<MemberState, MemberCommand, MemberEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve: () => ({ status: 'active' }),
  decide(command, state) {
    if (state.status !== 'absent') throw conflict('The member exists.');
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
  },
};
