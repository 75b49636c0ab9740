import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';
import { uniqueCardNumber } from './support/cards.ts';

interface Token {
  id: string;
  type: string;
  containers: string[];
  fingerprint: string;
  data?: unknown;
  privacy: { classification: string; impact_level: string; restriction_policy: string };
  card?: Record<string, unknown>;
  bank?: Record<string, unknown>;
}
interface Problem {
  errors: Record<string, string[]>;
}

describe('token types, privacy, card and bank summaries', () => {
  const env = useStack();
  const create = (body: unknown) => env.tenant.client.request<Token & Problem>('POST', '/tokens', { body });
  const read = (id: string) => env.tenant.client.request<Token>('GET', `/tokens/${id}`);

  it('creates each new type with its default privacy and the container derived from it', async () => {
    const cases = [
      ['card_number', '4242424242424242', 'pci', 'high', 'mask'],
      ['us_bank_account_number', '000123456789', 'bank', 'high', 'mask'],
      ['us_bank_routing_number', '011000015', 'bank', 'low', 'mask'],
      ['social_security_number', '123-45-6789', 'pii', 'high', 'mask'],
      ['employer_id_number', '12-3456789', 'pii', 'high', 'mask'],
      ['token', 'anything', 'general', 'high', 'redact'],
    ] as const;
    for (const [type, data, classification, impact_level, restriction_policy] of cases) {
      const created = await create({ type, data });
      expect(created.status, type).toBe(201);
      expect(created.body.privacy, type).toEqual({ classification, impact_level, restriction_policy });
      expect(created.body.containers, type).toEqual([`/${classification}/${impact_level}/`]);
      const got = await read(created.body.id);
      expect(got.body).toMatchObject({ type, data, privacy: created.body.privacy });
    }
  });

  it('refuses data that is not of its type, naming body.data and what is wrong', async () => {
    const cases = [
      ['card_number', '4242424242424241', 'Is not a valid card number (Luhn check)'],
      ['us_bank_account_number', '12', 'Must be 3 to 17 digits'],
      ['us_bank_routing_number', '011000016', 'Is not a valid ABA routing number (checksum)'],
      [
        'social_security_number',
        '666-12-3456',
        'Is not a valid social security number: the area number (first 3 digits) is never 000, 666 or 900–999',
      ],
      [
        'employer_id_number',
        '07-1234567',
        'Is not a valid employer identification number: the IRS assigns no EIN with this prefix (first 2 digits)',
      ],
    ] as const;
    for (const [type, data, message] of cases) {
      const refused = await create({ type, data });
      expect(refused.status, type).toBe(400);
      expect(refused.body.errors, type).toEqual({ 'body.data': [message] });
    }
  });

  it('takes privacy on create: the container follows it; a lower impact level or another class is a 400', async () => {
    const created = await create({
      type: 'token',
      data: 'x',
      privacy: { classification: 'pii', impact_level: 'moderate', restriction_policy: 'mask' },
    });
    expect(created.status).toBe(201);
    expect(created.body.containers).toEqual(['/pii/moderate/']);
    expect((await read(created.body.id)).body.privacy).toEqual({
      classification: 'pii',
      impact_level: 'moderate',
      restriction_policy: 'mask',
    });
    // Containers given win over the derived one.
    const placed = await create({ data: 'y', privacy: { impact_level: 'low' }, containers: ['/elsewhere/'] });
    expect(placed.body.containers).toEqual(['/elsewhere/']);
    expect(placed.body.privacy.impact_level).toBe('low');
    const refused = await create({
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 12, expiration_year: 2030 },
      privacy: { classification: 'general', impact_level: 'low' },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual({
      'body.privacy.classification': ['Must be pci for a card token (or left out)'],
      'body.privacy.impact_level': ['Must be high or higher for a card token'],
    });
    const unknownPolicy = await create({ data: 'z', privacy: { restriction_policy: 'reveal' } });
    expect(unknownPolicy.status).toBe(400);
    expect(Object.keys(unknownPolicy.body.errors)).toEqual(['body.privacy.restriction_policy']);
  });

  it('answers a card’s summary on every read, with or without its data', async () => {
    const number = uniqueCardNumber();
    const data = { number, expiration_month: 7, expiration_year: 2031, cvc: '321' };
    const created = await create({ type: 'card', data, metadata: { summary: number } });
    const summary = {
      bin: number.slice(0, 8),
      last4: number.slice(-4),
      brand: 'visa',
      expiration_month: 7,
      expiration_year: 2031,
    };
    expect(created.body.card).toEqual(summary);
    expect((await read(created.body.id)).body.card).toEqual(summary);
    const listed = await env.tenant.client.request<{ data: Token[] }>('GET', '/tokens', {
      query: { 'metadata.summary': number, include_data: 'false' },
    });
    expect(listed.body.data).toEqual([expect.objectContaining({ card: summary })]);
    expect(listed.body.data[0]).not.toHaveProperty('data');
    const v2 = await env.tenant.client.request<{ data: Token[] }>('GET', '/v2/tokens', {
      query: { metadata: JSON.stringify({ summary: number }) },
    });
    expect(v2.body.data[0]!.card).toEqual(summary);
    // An update of the data updates the summary.
    const updated = await env.tenant.client.request<Token>('PATCH', `/tokens/${created.body.id}`, {
      body: { data: { expiration_year: 2032 } },
    });
    expect(updated.body.card).toEqual({ ...summary, expiration_year: 2032 });
    // Test BINs the table knows tell their funding; an American Express number's BIN is 6 digits.
    const amex = await create({
      type: 'card',
      data: { number: '378282246310005', expiration_month: 1, expiration_year: 2030, cvc: '1234' },
    });
    expect(amex.body.card).toEqual({
      bin: '378282',
      last4: '0005',
      brand: 'american-express',
      funding: 'credit',
      expiration_month: 1,
      expiration_year: 2030,
    });
    const cardNumber = await create({ type: 'card_number', data: '5555555555554444' });
    expect(cardNumber.body.card).toEqual({
      bin: '55555555',
      last4: '4444',
      brand: 'mastercard',
      funding: 'credit',
    });
  });

  it('answers a bank account’s summary', async () => {
    const created = await create({
      type: 'bank',
      data: { routing_number: '011000015', account_number: '000123456789' },
    });
    expect(created.body.bank).toEqual({ routing_number: '011000015', account_number_last4: '6789' });
    expect((await read(created.body.id)).body.bank).toEqual(created.body.bank);
  });

  it('checks a card’s expiry and its CVC’s length by brand', async () => {
    const year = new Date().getUTCFullYear();
    const expired = await create({
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 12, expiration_year: year - 1 },
    });
    expect(expired.status).toBe(400);
    expect(expired.body.errors).toEqual({
      'body.data.expiration_year': ['The card has expired: the year is in the past'],
    });
    const amexWithThree = await create({
      type: 'card',
      data: { number: '378282246310005', expiration_month: 1, expiration_year: year + 2, cvc: '123' },
    });
    expect(amexWithThree.body.errors).toEqual({
      'body.data.cvc': ['Must be 4 digits for a american-express card'],
    });
    const visaWithFour = await create({
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 1, expiration_year: year + 2, cvc: '1234' },
    });
    expect(visaWithFour.body.errors).toEqual({ 'body.data.cvc': ['Must be 3 digits for a visa card'] });
  });

  it('fingerprints a card on its number: another expiry or CVC deduplicates to the same token', async () => {
    const number = uniqueCardNumber();
    const first = await create({
      type: 'card',
      data: { number, expiration_month: 1, expiration_year: 2031, cvc: '123' },
      deduplicate_token: true,
    });
    const again = await create({
      type: 'card',
      data: { number, expiration_month: 2, expiration_year: 2033, cvc: '999' },
      deduplicate_token: true,
    });
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    // The token answered is the first one, its data as it was given.
    expect((await read(first.body.id)).body.data).toMatchObject({ expiration_year: 2031, cvc: '123' });
    // Social security numbers with or without dashes are one number.
    const dashed = await create({ type: 'social_security_number', data: '234-56-7890' });
    const plain = await create({ type: 'social_security_number', data: '234567890' });
    expect(plain.body.fingerprint).toBe(dashed.body.fingerprint);
  });
});
