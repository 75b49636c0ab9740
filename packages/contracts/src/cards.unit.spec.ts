import { describe, expect, it } from 'vitest';
import {
  cardBinOf,
  cardBrandOf,
  cardBrandRangeOf,
  cardBrandRanges,
  cardBrands,
  cardDataIssues,
  cardFundingOf,
  cvcLengthOf,
  type CardBrand,
} from './cards.ts';
import { passesLuhn } from './checksums.ts';

/** A Luhn-valid number of this length starting with these digits. */
function numberStartingWith(prefix: string, length = 16): string {
  const body = prefix.padEnd(length - 1, '0');
  return body + [...'0123456789'].find((digit) => passesLuhn(body + digit))!;
}

/** The prefix one below or above, as many digits (undefined past 0…0 or 9…9). */
const neighbour = (prefix: string, step: -1 | 1): string | undefined => {
  const value = Number(prefix) + step;
  const text = String(value).padStart(prefix.length, '0');
  return value < 0 || text.length > prefix.length ? undefined : text;
};

describe('the BIN range table', () => {
  // Each range: its first and last prefixes fall in it, and the prefixes just outside fall in
  // another range (of this brand or another) or in none.
  for (const range of cardBrandRanges) {
    it(`${range.value} ${range.from}–${range.to}: first, last, and the neighbours outside`, () => {
      expect(cardBrandRangeOf(numberStartingWith(range.from))).toBe(range);
      expect(cardBrandRangeOf(numberStartingWith(range.to))).toBe(range);
      for (const outside of [neighbour(range.from, -1), neighbour(range.to, 1)]) {
        if (outside === undefined) continue;
        expect(cardBrandRangeOf(numberStartingWith(outside)), outside).not.toBe(range);
      }
    });
  }

  it('names every brand Basis Theory names, and every brand has a range', () => {
    expect(new Set(cardBrandRanges.map((range) => range.value))).toEqual(new Set(cardBrands));
  });

  it('tells the brands of well-known numbers, the most specific range winning', () => {
    const cases: [string, CardBrand | undefined][] = [
      ['4242424242424242', 'visa'],
      ['5555555555554444', 'mastercard'],
      ['2223003122003222', 'mastercard'],
      ['2720990000000007', 'mastercard'],
      ['2721000000000004', undefined],
      ['378282246310005', 'american-express'],
      ['6011111111111117', 'discover'],
      ['6500000000000002', 'discover'],
      ['3056930009020004', 'diners-club'],
      ['36227206271667', 'diners-club'],
      ['3566002020360505', 'jcb'],
      ['6200000000000005', 'unionpay'],
      ['6759649826438453', 'maestro'],
      ['6362970000457013', 'elo'],
      ['6504050000000004', 'elo'],
      ['2200000000000004', 'mir'],
      ['6062826786276634', 'hipercard'],
      ['1234567812345670', undefined],
    ];
    for (const [number, brand] of cases) expect(cardBrandOf(number), number).toBe(brand);
  });
});

describe('funding', () => {
  it('is known for the well-known test BINs, and for no other number', () => {
    expect(cardFundingOf('4242424242424242')).toBe('credit');
    expect(cardFundingOf('4000056655665556')).toBe('debit');
    expect(cardFundingOf('5105105105105100')).toBe('prepaid');
    expect(cardFundingOf('4111111111111111')).toBeUndefined();
  });
});

describe('the BIN a summary shows', () => {
  it('is 8 digits of a number of 16 digits or more, 6 of a shorter one', () => {
    expect(cardBinOf('4242424242424242')).toBe('42424242');
    expect(cardBinOf('4242424242424242428')).toBe('42424242');
    expect(cardBinOf('378282246310005')).toBe('378282');
    expect(cardBinOf('36227206271667')).toBe('362272');
  });
});

describe('card data checks beyond the shape', () => {
  const now = new Date('2026-11-26T12:00:00Z');
  const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

  it('wants a CVC of 4 digits for American Express, 3 for the other brands', () => {
    expect(cvcLengthOf('american-express')).toBe(4);
    expect(cvcLengthOf('visa')).toBe(3);
    expect(cvcLengthOf(undefined)).toBeUndefined();
    expect(cardDataIssues(card, now)).toEqual([]);
    expect(cardDataIssues({ ...card, cvc: '1234' }, now)).toEqual([
      { field: 'cvc', message: 'Must be 3 digits for a visa card' },
    ]);
    const amex = { ...card, number: '378282246310005' };
    expect(cardDataIssues({ ...amex, cvc: '1234' }, now)).toEqual([]);
    expect(cardDataIssues({ ...amex, cvc: '123' }, now)).toEqual([
      { field: 'cvc', message: 'Must be 4 digits for a american-express card' },
    ]);
    // A number of no known brand (or not a valid number) keeps the shape's 3 or 4 digits.
    expect(cardDataIssues({ ...card, number: '1234567812345670', cvc: '1234' }, now)).toEqual([]);
  });

  it('refuses an expiry in the past, to the month: the expiry month itself is still valid', () => {
    expect(cardDataIssues({ ...card, expiration_month: 11, expiration_year: 2026 }, now)).toEqual([]);
    expect(cardDataIssues({ ...card, expiration_month: 10, expiration_year: 2026 }, now)).toEqual([
      { field: 'expiration_month', message: 'The card has expired: the month is in the past' },
    ]);
    expect(cardDataIssues({ ...card, expiration_month: 12, expiration_year: 2025 }, now)).toEqual([
      { field: 'expiration_year', message: 'The card has expired: the year is in the past' },
    ]);
  });

  it('leaves malformed fields to the shape check', () => {
    expect(cardDataIssues({ ...card, expiration_month: 13, expiration_year: 2020, cvc: '12' }, now)).toEqual(
      [],
    );
    expect(cardDataIssues('not a card', now)).toEqual([]);
  });
});
