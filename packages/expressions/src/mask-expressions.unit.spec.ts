import { describe, expect, it } from 'vitest';
import { evaluateMask, MaskFailure } from './engine.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

describe('evaluateMask: a mask evaluated on a token’s own data', () => {
  it('given a card, when the mask mirrors it, then each text is rendered and a whole expression keeps its value', () => {
    expect(
      evaluateMask(
        {
          number: '{{ data.number | reveal_last: 4 }}',
          expiration_month: '{{ data.expiration_month }}',
          bin: '{{ data.number | card_bin }}',
        },
        card,
      ),
    ).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, bin: '42424242' });
  });

  it('given a text, when the mask has text around expressions, then it renders text', () => {
    expect(evaluateMask('••• {{ data | last4 }}', '123456789')).toBe('••• 6789');
    expect(evaluateMask('{{ data | reveal_first: 3, "*" }}', '123456789')).toBe('123******');
    expect(evaluateMask('{{ data | slice: 0, 2 }}', '123456789')).toBe('12');
  });

  it('given a field the data lacks, when the mask names it, then a MaskFailure names where in the mask', () => {
    const failure = (() => {
      try {
        evaluateMask({ number: '{{ data.pan | last4 }}' }, card);
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(MaskFailure);
    expect(failure).toMatchObject({
      location: 'mask.number',
      message: 'The mask names a field the data does not have',
    });
  });

  it('given an expression that does not read the data, when evaluated, then it is refused', () => {
    expect(() => evaluateMask('{{ 4242424242424242 }}', card)).toThrow(MaskFailure);
    expect(() => evaluateMask('{{ data | no_such_filter }}', card)).toThrow('Unknown filter no_such_filter');
  });
});
