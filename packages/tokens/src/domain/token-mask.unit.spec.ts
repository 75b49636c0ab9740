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
      flag: 'X',
    });
  });

  it('given booleans and nulls, then each is hidden as a one-character text is (X), whatever it holds', () => {
    expect(maskableData('token', { yes: true, no: false, none: null, one: 'a' })).toEqual({
      yes: 'X',
      no: 'X',
      none: 'X',
      one: 'X',
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

  it('given free-form data, when a mask copies a boolean, a null or a property name it does not spell, then it is refused naming body.mask', () => {
    const record = {
      patient: 'Ada Lovelace',
      hiv_positive: true,
      discharged: null,
      diagnoses: { 'F20.9 schizophrenia': { since: '2019' } },
    };
    const masks: TokenMask[] = [
      { hiv: '{{ data.hiv_positive }}' },
      { hiv: 'positive: {{ data.hiv_positive }}' },
      { discharged: '{{ data.discharged }}' },
      { d: "{{ data | json: '$.diagnoses.*~' }}" },
      { d: "{{ data | json: '$..*~' }}" },
      { d: '{{ data.diagnoses }}' },
      { d: 'codes {{ data.diagnoses | to_string }}' },
    ];
    for (const mask of masks) {
      expect(
        refusal(() => assertMaskFits(mask, record, 'token')),
        JSON.stringify(mask),
      ).toBe('body.mask');
    }
    // Names the mask spells are its own: values under them are reduced as any other.
    expect(
      refusal(() =>
        assertMaskFits(
          {
            patient: '{{ data.patient | reveal_last: 4 }}',
            since: "{{ data | json: '$.diagnoses.*.since' | reveal_last: 4 }}",
          },
          { ...record, diagnoses: { 'F20.9 schizophrenia': { since: 'since 2019' } } },
          'token',
        ),
      ),
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

  it('given a mask stored before booleans and names were hidden, then it shows neither', () => {
    const record = { hiv_positive: true, diagnoses: { 'F20.9 schizophrenia': { since: '2019' } } };
    expect(maskedData({ hiv: '{{ data.hiv_positive }}' }, record, 'token')).toEqual({ hiv: 'X' });
    for (const mask of [{ d: "{{ data | json: '$.diagnoses.*~' }}" }, { d: '{{ data.diagnoses }}' }]) {
      const shown = maskedData(mask, record, 'token');
      expect(shown, JSON.stringify(mask)).toBeUndefined();
    }
  });
});
