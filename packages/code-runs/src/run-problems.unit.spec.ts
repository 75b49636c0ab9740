import { describe, expect, it } from 'vitest';
import { guestProblem, outcomeName } from './run-problems.ts';
import {
  outcomeBody,
  principalData,
  principalFromData,
  problemData,
  problemFromData,
} from './run-request.ts';
import { Problem, type Principal } from '@tokenvault/platform';

describe('run problems and outcomes', () => {
  it('names the code’s thrown error reactor/<class>, with its status, message and field errors', () => {
    const problem = guestProblem({
      ok: false,
      error: { name: 'BadRequestError', status: 400, message: 'Bad card', errors: { card: ['expired'] } },
      cpuTimeMs: 1,
      wallTimeMs: 1,
    });
    expect(problem).toEqual({
      status: 400,
      slug: 'reactor/BadRequestError',
      title: 'Bad Request',
      detail: 'Bad card',
      errors: { card: ['expired'] },
    });
    expect(outcomeName(problem)).toBe('BadRequestError');
    expect(outcomeName({ status: 404, slug: 'not-found', title: 'Not Found' })).toBe('not-found');
  });

  it('answers an outcome’s body, or throws its problem as it was', () => {
    expect(outcomeBody({ ok: true, body: { raw: 1 } })).toEqual({ raw: 1 });
    const problem = new Problem(402, 'reactor/InvalidPaymentMethodError', 'Payment Required', 'Declined');
    expect(() => outcomeBody({ ok: false, problem: problemData(problem) })).toThrow(
      expect.objectContaining({ status: 402, slug: 'reactor/InvalidPaymentMethodError', detail: 'Declined' }),
    );
    expect(problemFromData(problemData(problem)).toJSON()).toEqual(problem.toJSON());
  });

  it('carries a principal across Redis as plain data', () => {
    const principal: Principal = {
      tenantId: 't',
      actorId: 'a',
      actorType: 'application',
      permissions: new Set(['token:use']),
      rules: [{ container: '/', permissions: ['token:read'] }],
      tenantSettings: { deduplicate_tokens: 'true' },
    };
    const data = principalData(principal);
    expect(JSON.parse(JSON.stringify(data))).toEqual({ ...principal, permissions: ['token:use'] });
    expect(principalFromData(data)).toEqual(principal);
  });
});
