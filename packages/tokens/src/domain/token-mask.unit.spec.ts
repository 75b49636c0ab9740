import { describe, expect, it } from 'vitest';
import { defaultMasks, type TokenMask } from '@tokenvault/contracts';
import { isDomainError } from '@tokenvault/platform';
import { assertMaskFits, maskableData, maskedData } from './token-mask.ts';

const card = { number: '4111111111111111', expiration_month: 4, expiration_year: 2031, cvc: '987' };

const refusal = (run: () => void): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (!isDomainError(error, 'invalid')) throw error;
    return Object.keys(error.fields ?? {}).join(',');
  }
};

describe('maskableData: what a mask may show, whatever its filters do', () => {
  it('given a card, then the number keeps its last four, the expiry stays and the CVC goes', () => {
    expect(maskableData('card', card)).toEqual({
      number: 'XXXXXXXXXXXX1111',
      expiration_month: 4,
      expiration_year: 2031,
    });
  });

  it('given a bank account, then the routing number stays and the account number keeps its last four', () => {
    expect(maskableData('bank', { routing_number: '011000015', account_number: '000123456789' })).toEqual({
      routing_number: '011000015',
      account_number: 'XXXXXXXX6789',
    });
  });

  it('given any other data, then each text and number keeps its last four, half of a shorter one', () => {
    expect(maskableData('social_security_number', '123-45-6789')).toBe('XXXXXXX6789');
    expect(maskableData('token', { pin: '1234', code: 42, nested: ['abcdefgh'], flag: true })).toEqual({
      pin: 'XX34',
      code: 'X2',
      nested: ['XXXXefgh'],
      flag: true,
    });
  });
});

describe('assertMaskFits: a given mask keeps masking, whoever sets it', () => {
  it('given masks that copy the number or the CVC (whole, in pieces, encoded), then each is refused naming body.mask', () => {
    const masks: TokenMask[] = [
      { number: '{{ data.number }}' },
      { a: '{{ data.number | slice: 0, 8 }}', b: '{{ data.number | slice: 8, 8 }}' },
      { number: '{{ data.number | replace: "1", "a" }}' },
      { number: '{{ data.number | reveal_last: 4 }}', cvc: '{{ data.cvc }}' },
      '{{ data | json }}',
    ];
    for (const mask of masks) {
      expect(
        refusal(() => assertMaskFits(mask, card, 'card')),
        JSON.stringify(mask),
      ).toBe('body.mask');
    }
  });

  it('given the default masks and reveal_last masks, then they fit', () => {
    expect(refusal(() => assertMaskFits(defaultMasks.card!, card, 'card'))).toBeUndefined();
    expect(
      refusal(() =>
        assertMaskFits(
          { n: '{{ data.number | reveal_last: 4, "*" }} exp {{ data.expiration_year }}' },
          card,
          'card',
        ),
      ),
    ).toBeUndefined();
    expect(
      refusal(() => assertMaskFits('{{ data | reveal_last: 4 }}', '123-45-6789', 'social_security_number')),
    ).toBeUndefined();
  });

  it('given a mask naming a field the data lacks, then it is refused naming where', () => {
    expect(refusal(() => assertMaskFits({ number: '{{ data.pan | last4 }}' }, card, 'card'))).toBe(
      'body.mask.number',
    );
  });
});

describe('maskedData: a masked read', () => {
  it('given a mask stored before it was checked that copies the number and the CVC, then it shows no more than the last four', () => {
    const shown = maskedData({ number: '{{ data.number }}', cvc: '{{ data.cvc }}' }, card, 'card');
    expect(shown).toBeUndefined();
    const copied = JSON.stringify(
      maskedData({ number: '{{ data.number | replace: "1", "a" }}' }, card, 'card'),
    );
    expect(copied).not.toContain('11111111');
    expect(copied).not.toMatch(/a{5,}/);
  });

  it('given the default card mask, then it shows the last four and the expiry', () => {
    expect(maskedData(defaultMasks.card, card, 'card')).toEqual({
      number: 'XXXXXXXXXXXX1111',
      expiration_month: 4,
      expiration_year: 2031,
    });
  });
});
