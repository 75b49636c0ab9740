import { describe, expect, it } from 'vitest';
import {
  fingerprintSubjectOf,
  holdsCvc,
  summariesShown,
  tokenSummariesOf,
  withoutCvc,
} from './token-details.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
const bank = { routing_number: '011000015', account_number: '000123456789' };

describe('the summaries derived from a token’s data', () => {
  it('card: BIN, last four, brand, funding and expiry, never the rest of the number nor the CVC', () => {
    expect(tokenSummariesOf('card', card)).toEqual({
      card: {
        bin: '42424242',
        last4: '4242',
        brand: 'visa',
        funding: 'credit',
        expiration_month: 12,
        expiration_year: 2030,
      },
    });
    const amex = tokenSummariesOf('card', { ...card, number: '371449635398431', cvc: '1234' });
    expect(amex).toEqual({
      card: {
        bin: '371449',
        last4: '8431',
        brand: 'american-express',
        funding: 'credit',
        expiration_month: 12,
        expiration_year: 2030,
      },
    });
    // A number of no known range: no brand, no funding.
    expect(tokenSummariesOf('card', { ...card, number: '1234567812345670' }).card).toEqual({
      bin: '12345678',
      last4: '5670',
      expiration_month: 12,
      expiration_year: 2030,
    });
  });

  it('card_number: the card summary without an expiry', () => {
    expect(tokenSummariesOf('card_number', '5555555555554444')).toEqual({
      card: { bin: '55555555', last4: '4444', brand: 'mastercard', funding: 'credit' },
    });
  });

  it('bank: the routing number and the account number’s last four', () => {
    expect(tokenSummariesOf('bank', bank)).toEqual({
      bank: { routing_number: '011000015', account_number_last4: '6789' },
    });
  });

  it('none for the other types', () => {
    expect(tokenSummariesOf('token', { number: '4242424242424242' })).toEqual({});
    expect(tokenSummariesOf('us_bank_account_number', '000123456789')).toEqual({});
    expect(tokenSummariesOf('social_security_number', '123-45-6789')).toEqual({});
  });
});

describe('what a fingerprint is of', () => {
  it('a card’s number alone, so another expiry or CVC is the same card', () => {
    expect(fingerprintSubjectOf('card', card)).toBe('4242424242424242');
    expect(fingerprintSubjectOf('card', { ...card, cvc: '999', expiration_year: 2031 })).toBe(
      '4242424242424242',
    );
  });

  it('a bank account’s routing and account numbers (its whole data)', () => {
    expect(fingerprintSubjectOf('bank', bank)).toEqual(bank);
  });

  it('the digits of a social security or employer id number, with or without dashes', () => {
    expect(fingerprintSubjectOf('social_security_number', '123-45-6789')).toBe('123456789');
    expect(fingerprintSubjectOf('social_security_number', '123456789')).toBe('123456789');
    expect(fingerprintSubjectOf('employer_id_number', '12-3456789')).toBe('123456789');
  });

  it('the whole data of every other type', () => {
    expect(fingerprintSubjectOf('token', { a: 1 })).toEqual({ a: 1 });
    expect(fingerprintSubjectOf('card_number', '4242424242424242')).toBe('4242424242424242');
  });
});

describe('a card’s CVC', () => {
  it('is held by card data that has one, and removed leaving the rest as it was', () => {
    expect(holdsCvc('card', card)).toBe(true);
    const { cvc: _cvc, ...rest } = card;
    expect(holdsCvc('card', rest)).toBe(false);
    expect(holdsCvc('token', { cvc: '123' })).toBe(false);
    expect(withoutCvc(card)).toEqual(rest);
    expect(card.cvc).toBe('123');
  });
});

describe('summariesShown: a token’s summaries as the caller’s read decision shows them', () => {
  const fields = {
    id: 't',
    fingerprint: 'f',
    card: { bin: '42424242', last4: '4242', brand: 'visa', expiration_month: 12, expiration_year: 2030 },
    bank: { routing_number: '011000015', account_number_last4: '6789' },
  };

  it('reveal: all of them, the BIN of eight', () => {
    expect(summariesShown(fields, 'reveal')).toEqual(fields);
  });

  it('mask: the first six and last four of the card, the bank’s routing number and last four, no fingerprint', () => {
    const { fingerprint: _fingerprint, ...withoutFingerprint } = fields;
    expect(summariesShown(fields, 'mask')).toEqual({
      ...withoutFingerprint,
      card: { ...fields.card, bin: '424242' },
    });
    const short = { id: 't', card: { bin: '378282', last4: '0005' } };
    expect(summariesShown(short, 'mask')).toEqual(short);
  });

  it('redact, or no read at all: none, nor the fingerprint', () => {
    expect(summariesShown(fields, 'redact')).toEqual({ id: 't' });
    expect(summariesShown(fields, undefined)).toEqual({ id: 't' });
  });
});
