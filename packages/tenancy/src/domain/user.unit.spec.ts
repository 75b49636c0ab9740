import { describe, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { domainErrorWith } from '@tokenvault/platform/testing';
import { userDecider, type UserCommand } from './user.ts';

const register: UserCommand = {
  type: 'RegisterUser',
  userId: '9d2f0a1e-0000-4000-8000-000000000001',
  email: 'ada@example.com',
  firstName: 'Ada',
  now: '2026-03-01T00:00:00.000Z',
};
const spec = deciderSpec(userDecider);

describe('user decider', () => {
  it('registers a user with a name', () => {
    spec
      .given([])
      .when(register)
      .then([
        {
          type: 'UserRegistered',
          data: {
            user_id: register.userId,
            email: register.email,
            first_name: 'Ada',
            created_at: register.now,
          },
        },
      ]);
  });

  it('refuses names PostgreSQL cannot store or that could pass for other text (invalid, naming the field)', () => {
    for (const bad of ['\u0000', 'Ada\ud800', 'Ada\u202eb', 'a\r\nb', 'x'.repeat(201)]) {
      spec
        .given([])
        .when({ ...register, firstName: bad })
        .thenThrows(domainErrorWith('invalid', { field: 'body.first_name' }));
      spec
        .given([])
        .when({ ...register, lastName: bad })
        .thenThrows(domainErrorWith('invalid', { field: 'body.last_name' }));
    }
  });
});
