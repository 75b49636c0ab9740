import { describe, expect, it } from 'vitest';
import { Problem } from '@tokenvault/platform';
import { checkTokenizeSize, tokenize } from './tokenize.ts';

const runtimeDetail = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    expect((error as Problem).slug).toBe('reactor-runtime');
    return (error as Problem).detail;
  }
  throw new Error('expected a problem');
};

describe('tokenize (a raw-and-tokens answer’s token-create bodies)', () => {
  it('replaces every body with data by the token created from it, keeping the shape', async () => {
    const created: unknown[] = [];
    const tokens = await tokenize(
      { card: { data: '4242' }, nested: { ssn: { data: '123', type: 'ssn' } } },
      (body) => {
        created.push(body);
        return Promise.resolve({ id: `token-${created.length}` });
      },
    );
    expect(tokens).toEqual({ card: { id: 'token-1' }, nested: { ssn: { id: 'token-2' } } });
    expect(created).toEqual([{ data: '4242' }, { data: '123', type: 'ssn' }]);
  });

  it('names a refused body’s field errors under tokenize.<path>', async () => {
    const refused = tokenize({ card: { data: 'x', type: 'nope' } }, () =>
      Promise.reject(
        new Problem(400, 'validation', 'Bad Request', 'Invalid', { 'body.type': ['Unknown type'] }),
      ),
    );
    await expect(refused).rejects.toMatchObject({
      status: 400,
      slug: 'validation',
      errors: { 'tokenize.card.type': ['Unknown type'] },
    });
  });

  it('fails the run on a value that is neither a body nor an object of them', async () => {
    await expect(tokenize({ card: 'x' }, () => Promise.resolve({}))).rejects.toMatchObject({
      slug: 'reactor-runtime',
      detail: 'tokenize.card must be an object.',
    });
  });

  it('refuses more bodies than the run’s service calls, and shapes nested past 16 levels', () => {
    expect(() => checkTokenizeSize({ a: { data: 1 }, b: { data: 2 } }, 2)).not.toThrow();
    expect(
      runtimeDetail(() => checkTokenizeSize({ a: { data: 1 }, b: { data: 2 }, c: { data: 3 } }, 2)),
    ).toBe('tokenize holds more than 2 tokens.');
    let deep: Record<string, unknown> = { data: 1 };
    for (let level = 0; level < 16; level++) deep = { next: deep };
    expect(runtimeDetail(() => checkTokenizeSize(deep, 100))).toBe(
      'tokenize is nested deeper than 16 levels.',
    );
  });
});
