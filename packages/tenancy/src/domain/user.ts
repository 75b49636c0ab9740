import { alreadyExists, invalidCommand, type FieldErrors } from '@tokenvault/platform';
import { refusedInNames } from '@tokenvault/contracts';
import type { Decider, EventOf } from '@tokenvault/cqrs';
import type { TenancyEvent } from './tenancy.events.ts';

export type UserEvent = EventOf<TenancyEvent, 'UserRegistered'>;
export type UserState = { registered: boolean };
export type UserCommand = {
  type: 'RegisterUser';
  userId: string;
  email: string;
  firstName?: string;
  lastName?: string;
  now: string;
};

/** The request schema checks the same; this holds for every caller, and before anything is appended. */
function checkNames(command: UserCommand) {
  const errors: FieldErrors = {};
  for (const [field, value] of [
    ['body.first_name', command.firstName],
    ['body.last_name', command.lastName],
  ] as const) {
    if (value !== undefined && (value.length > 200 || refusedInNames.test(value))) {
      errors[field] = ['Must be at most 200 characters, without control characters or unpaired surrogates'];
    }
  }
  if (Object.keys(errors).length > 0) throw invalidCommand('The name is not valid.', errors);
}

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  initialState: () => ({ registered: false }),
  evolve: () => ({ registered: true }),
  decide(command, state) {
    if (state.registered) throw alreadyExists('The user exists.');
    checkNames(command);
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
