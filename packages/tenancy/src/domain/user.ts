import { conflict } from '@tokenvault/platform';
import type { Decider } from '@tokenvault/cqrs';
import type { TenancyEventOf } from './events.ts';

export type UserEvent = TenancyEventOf<'UserRegistered'>;
export type UserState = { registered: boolean };
export type UserCommand = {
  type: 'RegisterUser';
  userId: string;
  email: string;
  firstName?: string;
  lastName?: string;
  now: string;
};

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  initialState: () => ({ registered: false }),
  evolve: () => ({ registered: true }),
  decide(command, state) {
    if (state.registered) throw conflict('The user exists.');
    return [
      {
        type: 'UserRegistered',
        data: {
          user_id: command.userId,
          email: command.email,
          ...(command.firstName === undefined ? {} : { first_name: command.firstName }),
          ...(command.lastName === undefined ? {} : { last_name: command.lastName }),
          created_at: command.now,
        },
      },
    ];
  },
};
