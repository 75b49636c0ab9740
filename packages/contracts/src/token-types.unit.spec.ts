import { describe, expect, it } from 'vitest';
import {
  containerOfPrivacy,
  employerIdPrefixes,
  privacyIssues,
  privacyOf,
  tokenTypes,
} from './token-types.ts';
import { createTokenBody, defaultContainers, tokenDataIssues, type TokenType } from './tokens.schemas.ts';

/** The messages a create of this data gets, by path (`data` for a single value). */
function problemsOf(type: TokenType, data: unknown): Record<string, string[]> {
  const result = createTokenBody.safeParse({ type, data });
  const problems: Record<string, string[]> = {};
  if (result.success) return problems;
  for (const issue of result.error.issues) (problems[issue.path.join('.')] ??= []).push(issue.message);
  return problems;
}

describe('privacy per type', () => {
  it('defaults as Basis Theory does, and containers follow it', () => {
    expect(privacyOf('token')).toEqual({
      classification: 'general',
      impact_level: 'high',
      restriction_policy: 'redact',
    });
    expect(privacyOf('card')).toEqual({
      classification: 'pci',
      impact_level: 'high',
      restriction_policy: 'mask',
    });
    expect(privacyOf('bank')).toEqual({
      classification: 'bank',
      impact_level: 'high',
      restriction_policy: 'mask',
    });
    expect(privacyOf('card_number')).toEqual(privacyOf('card'));
    expect(privacyOf('us_bank_account_number')).toEqual(privacyOf('bank'));
    expect(privacyOf('us_bank_routing_number')).toEqual({
      classification: 'bank',
      impact_level: 'low',
      restriction_policy: 'mask',
    });
    expect(privacyOf('social_security_number')).toEqual({
      classification: 'pii',
      impact_level: 'high',
      restriction_policy: 'mask',
    });
    expect(privacyOf('employer_id_number')).toEqual(privacyOf('social_security_number'));
    // Today's default containers are what the default privacy says.
    expect(defaultContainers).toMatchObject({
      token: '/general/high/',
      card: '/pci/high/',
      bank: '/bank/high/',
    });
    for (const type of tokenTypes) expect(defaultContainers[type]).toBe(containerOfPrivacy(privacyOf(type)));
  });

  it('takes what a create gives over the defaults', () => {
    expect(privacyOf('token', { classification: 'pii', impact_level: 'moderate' })).toEqual({
      classification: 'pii',
      impact_level: 'moderate',
      restriction_policy: 'redact',
    });
    expect(privacyOf('card', { restriction_policy: 'redact' }).restriction_policy).toBe('redact');
    expect(privacyOf('card', null)).toEqual(privacyOf('card'));
  });

  it('refuses another classification than the type’s, and an impact level below its minimum', () => {
    expect(privacyIssues('token', { classification: 'pci', impact_level: 'low' })).toEqual([]);
    expect(privacyIssues('card', { classification: 'general' })).toEqual([
      { field: 'classification', message: 'Must be pci for a card token (or left out)' },
    ]);
    expect(privacyIssues('card', { classification: 'pci', impact_level: 'high' })).toEqual([]);
    expect(privacyIssues('card_number', { impact_level: 'moderate' })).toEqual([
      { field: 'impact_level', message: 'Must be high or higher for a card_number token' },
    ]);
    expect(privacyIssues('employer_id_number', { impact_level: 'low' })).toEqual([]);
    expect(privacyIssues('us_bank_routing_number', { impact_level: 'moderate' })).toEqual([]);
    const refused = createTokenBody.safeParse({
      type: 'social_security_number',
      data: '123-45-6789',
      privacy: { classification: 'general', impact_level: 'low', restriction_policy: 'reveal' },
    });
    expect(refused.success).toBe(false);
    expect(refused.error!.issues.map((issue) => issue.path.join('.')).sort()).toEqual([
      'privacy.restriction_policy',
    ]);
    const wrongLevels = createTokenBody.safeParse({
      type: 'social_security_number',
      data: '123-45-6789',
      privacy: { classification: 'general', impact_level: 'low' },
    });
    expect(wrongLevels.error!.issues.map((issue) => issue.path.join('.')).sort()).toEqual([
      'privacy.classification',
      'privacy.impact_level',
    ]);
  });
});

describe('data validation of the single-value types', () => {
  it('card_number: 13 to 19 digits passing the Luhn check', () => {
    for (const valid of ['4242424242424242', '378282246310005', '4242424242424242428']) {
      expect(problemsOf('card_number', valid), valid).toEqual({});
    }
    expect(problemsOf('card_number', '4242424242424241')).toEqual({
      data: ['Is not a valid card number (Luhn check)'],
    });
    expect(problemsOf('card_number', '424242424242')).toEqual({ data: ['Must be 13 to 19 digits'] });
    expect(problemsOf('card_number', '4242-4242-4242-4242')).toEqual({ data: ['Must be 13 to 19 digits'] });
    expect(problemsOf('card_number', 4242424242424242)).toEqual({
      data: ['Must be a string: the card number as text'],
    });
  });

  it('us_bank_account_number: 3 to 17 digits', () => {
    for (const valid of ['123', '000123456789', '12345678901234567']) {
      expect(problemsOf('us_bank_account_number', valid), valid).toEqual({});
    }
    for (const invalid of ['12', '123456789012345678', '12 34', 'abc']) {
      expect(problemsOf('us_bank_account_number', invalid), invalid).toEqual({
        data: ['Must be 3 to 17 digits'],
      });
    }
  });

  it('us_bank_routing_number: 9 digits passing the ABA checksum', () => {
    for (const valid of ['011000015', '021000021', '110000000']) {
      expect(problemsOf('us_bank_routing_number', valid), valid).toEqual({});
    }
    expect(problemsOf('us_bank_routing_number', '011000016')).toEqual({
      data: ['Is not a valid ABA routing number (checksum)'],
    });
    expect(problemsOf('us_bank_routing_number', '01100001')).toEqual({ data: ['Must be 9 digits'] });
  });

  it('social_security_number: NNN-NN-NNNN or 9 digits, never area 000, 666 or 9xx, group 00, serial 0000', () => {
    for (const valid of ['123-45-6789', '123456789', '665-01-0001', '899-99-9999']) {
      expect(problemsOf('social_security_number', valid), valid).toEqual({});
    }
    expect(problemsOf('social_security_number', '123-456789')).toEqual({
      data: ['Must be NNN-NN-NNNN or 9 digits'],
    });
    expect(problemsOf('social_security_number', '12345678')).toEqual({
      data: ['Must be NNN-NN-NNNN or 9 digits'],
    });
    for (const area of ['000', '666', '900', '999']) {
      expect(problemsOf('social_security_number', `${area}-12-3456`), area).toEqual({
        data: [
          'Is not a valid social security number: the area number (first 3 digits) is never 000, 666 or 900–999',
        ],
      });
    }
    expect(problemsOf('social_security_number', '123-00-4567')).toEqual({
      data: ['Is not a valid social security number: the group number (digits 4–5) is never 00'],
    });
    expect(problemsOf('social_security_number', '123450000')).toEqual({
      data: ['Is not a valid social security number: the serial number (last 4 digits) is never 0000'],
    });
  });

  it('employer_id_number: NN-NNNNNNN or 9 digits with a prefix the IRS assigns', () => {
    for (const valid of ['12-3456789', '123456789', '01-0000001', '99-1234567']) {
      expect(problemsOf('employer_id_number', valid), valid).toEqual({});
    }
    expect(problemsOf('employer_id_number', '123-456789')).toEqual({
      data: ['Must be NN-NNNNNNN or 9 digits'],
    });
    for (const prefix of [
      '00',
      '07',
      '08',
      '09',
      '17',
      '18',
      '19',
      '28',
      '29',
      '49',
      '69',
      '70',
      '78',
      '79',
      '89',
      '96',
      '97',
    ]) {
      expect(employerIdPrefixes.has(prefix), prefix).toBe(false);
      expect(problemsOf('employer_id_number', `${prefix}-1234567`), prefix).toEqual({
        data: [
          'Is not a valid employer identification number: the IRS assigns no EIN with this prefix (first 2 digits)',
        ],
      });
    }
    expect(employerIdPrefixes.size).toBe(100 - 17);
  });
});

describe('card data', () => {
  const now = new Date('2026-11-26T12:00:00Z');
  const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
  const fields = (data: unknown) => tokenDataIssues('card', data, now).map((issue) => issue.path!.join('.'));

  it('checks the CVC’s length by brand and the expiry against now, by field', () => {
    expect(fields(card)).toEqual([]);
    expect(fields({ ...card, cvc: '1234' })).toEqual(['data.cvc']);
    expect(fields({ ...card, number: '378282246310005', cvc: '1234' })).toEqual([]);
    expect(fields({ ...card, expiration_year: 2025 })).toEqual(['data.expiration_year']);
    expect(fields({ ...card, expiration_year: 2026, expiration_month: 10 })).toEqual([
      'data.expiration_month',
    ]);
    // The shape's own checks, one issue per field.
    expect(
      fields({ number: '4242424242424241', expiration_month: 13, expiration_year: 2030, cvc: '12' }).sort(),
    ).toEqual(['data.cvc', 'data.expiration_month', 'data.number']);
  });
});
