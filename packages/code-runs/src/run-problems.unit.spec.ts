import { describe, expect, it } from 'vitest';
import { guestProblem, outcomeName } from './run-problems.ts';
import {
  outcomeBody,
  principalData,
  principalFromData,
  problemData,
  problemFromData,
} from './run-request.ts';
import { Problem, tenantCodeOrigin, type Principal } from '@tokenvault/platform';

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
      tenant_code: {
        error_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
        class: 'BadRequestError',
      },
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

  it('marks the code’s error as tenant code’s, across the sealed outcome: the caller’s answer is unchanged', () => {
    const data = guestProblem({
      ok: false,
      error: { name: 'ReactorRuntimeError', status: 500, message: 'declined 4242424242424242' },
      cpuTimeMs: 1,
      wallTimeMs: 1,
    });
    const sourced = { ...data, tenant_code: { ...data.tenant_code!, source: 'reactors/r1' } };
    const carried = problemFromData(JSON.parse(JSON.stringify(sourced)) as typeof sourced);
    expect(tenantCodeOrigin(carried)).toEqual({
      errorId: data.tenant_code!.error_id,
      className: 'ReactorRuntimeError',
      source: 'reactors/r1',
    });
    // What the caller is answered: the docs' shape, the mark nowhere in it.
    expect(carried.toJSON()).toEqual({
      type: 'https://tokenvault.dev/problems/reactor/ReactorRuntimeError',
      title: 'Internal Server Error',
      status: 500,
      detail: 'declined 4242424242424242',
    });
    expect(problemData(carried)).toEqual(sourced);
    expect(() => outcomeBody({ ok: false, problem: sourced })).toThrow(
      expect.objectContaining({ detail: 'declined 4242424242424242' }),
    );
    const thrown = (() => {
      try {
        return outcomeBody({ ok: false, problem: sourced });
      } catch (error) {
        return error;
      }
    })();
    expect(tenantCodeOrigin(thrown)?.source).toBe('reactors/r1');
    // A class name the sandbox does not answer is none of the code's choosing.
    const renamed = guestProblem({
      ok: false,
      error: { name: 'X4242424242424242' as 'ReactorRuntimeError', status: 500, message: 'x' },
      cpuTimeMs: 1,
      wallTimeMs: 1,
    });
    expect(renamed.tenant_code?.class).toBe('ReactorRuntimeError');
    // A service's own problem is not tenant code's.
    expect(problemData(new Problem(404, 'not-found', 'Not Found', 'No reactor'))).not.toHaveProperty(
      'tenant_code',
    );
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
