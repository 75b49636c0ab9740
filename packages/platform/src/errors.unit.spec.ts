import { describe, expect, it } from 'vitest';
import {
  alreadyExists,
  conflictError,
  DomainError,
  goneError,
  invalidCommand,
  notAllowed,
  notFoundError,
  unprocessableCommand,
  type DomainErrorKind,
} from './domain-errors.ts';
import { asProblem, badRequest, problemOf, Problem } from './errors.ts';

const problems = 'https://tokenvault.dev/problems/';

describe('problemOf: a decider’s refusal as the API answers it', () => {
  // Every kind, with the status, type and title the deciders' problems had before they said
  // what went wrong in domain words (e2e and SDK specs assert these).
  const answers: Record<DomainErrorKind, { status: number; type: string; title: string }> = {
    invalid: { status: 400, type: `${problems}bad-request`, title: 'Bad Request' },
    'not-allowed': { status: 403, type: `${problems}forbidden`, title: 'Forbidden' },
    'not-found': { status: 404, type: `${problems}not-found`, title: 'Not Found' },
    'already-exists': { status: 409, type: `${problems}conflict`, title: 'Conflict' },
    conflict: { status: 409, type: `${problems}conflict`, title: 'Conflict' },
    gone: { status: 410, type: `${problems}gone`, title: 'Gone' },
    unprocessable: { status: 422, type: `${problems}unprocessable`, title: 'Unprocessable Entity' },
  };

  it.each(Object.entries(answers))(
    'maps %s to its status, type and title, with the detail',
    (kind, answer) => {
      const problem = problemOf(
        new DomainError(kind as DomainErrorKind, 'What went wrong, and how to fix it.'),
      );
      expect(problem).toBeInstanceOf(Problem);
      expect(problem.toJSON()).toEqual({ ...answer, detail: 'What went wrong, and how to fix it.' });
      expect(problem.headers).toEqual({});
    },
  );

  it('is what each named constructor of a refusal answers', () => {
    const answered = (error: DomainError) => ({ kind: error.kind, ...problemOf(error).toJSON() });
    expect(answered(invalidCommand('Invalid.'))).toMatchObject({ kind: 'invalid', status: 400 });
    expect(answered(notAllowed('Not allowed.'))).toMatchObject({ kind: 'not-allowed', status: 403 });
    expect(answered(notFoundError('No such thing.'))).toMatchObject({ kind: 'not-found', status: 404 });
    expect(answered(alreadyExists('It exists.'))).toMatchObject({ kind: 'already-exists', status: 409 });
    expect(answered(conflictError('In use.'))).toMatchObject({ kind: 'conflict', status: 409 });
    expect(answered(goneError('Expired.'))).toMatchObject({ kind: 'gone', status: 410 });
    expect(answered(unprocessableCommand('Cannot.'))).toMatchObject({ kind: 'unprocessable', status: 422 });
  });

  it('keeps the field errors: each field named, with how to fix it', () => {
    const fields = {
      'body.metadata': ['At most 50 entries'],
      'path.child_id': ['Must differ from parent_id'],
    };
    expect(problemOf(invalidCommand('The patch is not valid.', fields)).toJSON()).toEqual({
      type: `${problems}bad-request`,
      title: 'Bad Request',
      status: 400,
      detail: 'The patch is not valid.',
      errors: fields,
    });
    expect(
      problemOf(notAllowed('Not held.', { 'body.permissions': ['token:use is not held by this key'] }))
        .errors,
    ).toEqual({ 'body.permissions': ['token:use is not held by this key'] });
    expect(
      problemOf(unprocessableCommand('Does not compile.', { 'body.code': ['Unexpected token'] })).errors,
    ).toEqual({
      'body.code': ['Unexpected token'],
    });
    // No fields: no `errors` member at all, as before.
    expect(problemOf(notFoundError('No token with this id.')).toJSON()).not.toHaveProperty('errors');
  });

  it('answers a refusal with a code of its own with that type, and the kind’s status and title', () => {
    const problem = problemOf(
      invalidCommand(
        'The reactor’s configuration no longer satisfies its formula; update the reactor.',
        { 'body.configuration.API_KEY': ['Required'] },
        'invalid-reactor-configuration',
      ),
    );
    expect(problem.toJSON()).toEqual({
      type: `${problems}invalid-reactor-configuration`,
      title: 'Bad Request',
      status: 400,
      detail: 'The reactor’s configuration no longer satisfies its formula; update the reactor.',
      errors: { 'body.configuration.API_KEY': ['Required'] },
    });
  });

  it('is the problem the same refusal answered as a Problem built by hand before', () => {
    const before = new Problem(400, 'bad-request', 'Bad Request', 'A token cannot be its own child.', {
      'path.child_id': ['Must differ from parent_id'],
    });
    const now = problemOf(
      invalidCommand('A token cannot be its own child.', { 'path.child_id': ['Must differ from parent_id'] }),
    );
    expect(JSON.stringify(now)).toBe(JSON.stringify(before));
    expect(now.message).toBe(before.message);
  });
});

describe('asProblem: what an error answers with at an edge', () => {
  it('is a Problem as it is, a DomainError mapped, and nothing for any other error', () => {
    const problem = badRequest('Malformed.');
    expect(asProblem(problem)).toBe(problem);
    expect(asProblem(notFoundError('No proxy with this id.'))?.toJSON()).toEqual({
      type: `${problems}not-found`,
      title: 'Not Found',
      status: 404,
      detail: 'No proxy with this id.',
    });
    expect(asProblem(new Error('a bug'))).toBeUndefined();
    expect(asProblem(undefined)).toBeUndefined();
  });
});
