import { describe, expect, it } from 'vitest';
import { bodyPath, tokenRequestsIn, withTokenRequestsAnswered } from './token-requests.ts';

describe('token requests of a tokenize body', () => {
  const body = {
    id: 'c-1',
    name: { type: 'token', data: 'Ada' },
    tags: ['plain', { type: 'token', data: 'tag' }, { type: 'only a type' }],
    nested: {
      deeper: { card: { type: 'card', data: { number: '4242', inner: { type: 'token', data: 'x' } } } },
    },
  };

  it('finds every object with type and data, in document order, never one inside another', () => {
    expect(tokenRequestsIn(body).map(({ path }) => bodyPath(path))).toEqual([
      'body.name',
      'body.tags.1',
      'body.nested.deeper.card',
    ]);
  });

  it('a request as the whole body, or an array of them, is found at its place', () => {
    expect(tokenRequestsIn({ type: 'token', data: 1 }).map(({ path }) => bodyPath(path))).toEqual(['body']);
    expect(tokenRequestsIn([{ type: 'token', data: 1 }, 3]).map(({ path }) => path)).toEqual([[0]]);
  });

  it('answers each request in its place and keeps everything else as it came', () => {
    expect(withTokenRequestsAnswered(body, ['T1', 'T2', 'T3'])).toEqual({
      id: 'c-1',
      name: 'T1',
      tags: ['plain', 'T2', { type: 'only a type' }],
      nested: { deeper: { card: 'T3' } },
    });
  });

  it('refuses answers that do not match the requests one for one', () => {
    expect(() => withTokenRequestsAnswered(body, ['T1'])).toThrow(/1 answers for 3/);
  });
});
