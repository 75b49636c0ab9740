import { describe, expect, it } from 'vitest';
import { headersAndBody, rawAndTokens } from './answers.ts';

const noTokens = () => Promise.reject(new Error('no token is created'));

describe('what the code answers', () => {
  it('raw-and-tokens: { raw, tokenize } becomes { raw, tokens }; nothing answered is an empty body', async () => {
    expect(await rawAndTokens(undefined, noTokens, 10)).toEqual({});
    expect(await rawAndTokens(null, noTokens, 10)).toEqual({});
    expect(await rawAndTokens({ raw: { ok: true }, other: 1 }, noTokens, 10)).toEqual({ raw: { ok: true } });
    expect(
      await rawAndTokens(
        { raw: 1, tokenize: { card: { data: '4242' } } },
        () => Promise.resolve({ id: 't' }),
        10,
      ),
    ).toEqual({ raw: 1, tokens: { card: { id: 't' } } });
  });

  it('raw-and-tokens: anything but an object, or too many tokens, fails the run before a token is made', async () => {
    await expect(rawAndTokens('text', noTokens, 10)).rejects.toMatchObject({
      status: 500,
      slug: 'reactor-runtime',
      detail: 'The reactor must return an object ({ raw, tokenize }).',
    });
    await expect(
      rawAndTokens({ tokenize: { a: { data: 1 }, b: { data: 2 } } }, noTokens, 1),
    ).rejects.toMatchObject({
      detail: 'tokenize holds more than 1 tokens.',
    });
  });

  it('headers-and-body: the headers and body as answered, anything but an object failing the run', () => {
    expect(headersAndBody({ headers: { a: '1' }, body: { b: 2 }, other: 3 })).toEqual({
      headers: { a: '1' },
      body: { b: 2 },
    });
    expect(headersAndBody({})).toEqual({});
    expect(() => headersAndBody([1])).toThrow('The transform must return an object ({ headers, body }).');
  });
});
