// A token intent's summary as an oracle on its card. The attacker holds the card form's public
// key (it creates intents: each answer carries the fingerprint of the card it sent) and a backend
// key that may read intents (token-intent:read) or convert them into tokens it may only read
// masked. Reading a customer's intent, it gets the 8-digit BIN and the last four (a 16-digit
// number left to 1,000 Luhn candidates) and the fingerprint: one intent per candidate from the
// public key, and the candidate whose fingerprint matches is the number. No read of an intent,
// and no conversion by a key its token is not revealed to, may show the fingerprint or more than
// the first six and last four.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Intent {
  id: string;
  fingerprint?: string;
  card?: { bin: string; last4: string };
}

describe('attack: a token intent’s BIN, last four and fingerprint answer a guess of its card', () => {
  const env = useStack();
  const number = uniqueCardNumber();
  const card = { number, expiration_month: 10, expiration_year: 2041, cvc: '987' };
  let publicKey: string;
  let intentReader: string;
  let maskedConverter: string;

  const keyOf = async (body: object) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', { body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };
  const createIntent = async (data: object) => {
    const created = await env.tenant.client.request<Intent>('POST', '/token-intents', {
      body: { type: 'card', data },
      apiKey: publicKey,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };

  beforeAll(async () => {
    publicKey = await keyOf({
      name: 'Card form',
      type: 'public',
      permissions: ['token:create', 'token-intent:create'],
    });
    intentReader = await keyOf({
      name: 'Checkout backend',
      type: 'private',
      permissions: ['token-intent:read'],
      rules: [],
    });
    maskedConverter = await keyOf({
      name: 'Order service',
      type: 'private',
      permissions: [],
      rules: [{ container: '/', transform: 'mask', permissions: ['token:create', 'token:read'] }],
    });
  });

  it('the create answers its creator what it sent; a read of the intent shows six and four, no fingerprint', async () => {
    const created = await createIntent(card);
    // The creator sent the number: its answer may summarise it (Basis Theory's shape).
    expect(created.card?.bin).toBe(number.slice(0, 8));
    expect(created.fingerprint).toBeTruthy();

    const read = await env.tenant.client.request<Intent>('GET', `/token-intents/${created.id}`, {
      apiKey: intentReader,
    });
    expect(read.status).toBe(200);
    expect(read.body.fingerprint, 'the fingerprint confirms a guess').toBeUndefined();
    expect(read.body.card?.bin, 'BIN of 8 + last four leaves 1,000 candidates').toBe(number.slice(0, 6));
    expect(read.body.card?.last4).toBe(number.slice(-4));
    // The tenant's own admin key reads it alike: no key reads an intent's data.
    const asAdmin = await env.tenant.client.request<Intent>('GET', `/token-intents/${created.id}`);
    expect(asAdmin.body.fingerprint).toBeUndefined();
    expect(asAdmin.body.card?.bin).toBe(number.slice(0, 6));
  });

  it('a right and a wrong guess of the card read the intent alike', async () => {
    const target = await createIntent(card);
    const read = await env.tenant.client.request<Intent>('GET', `/token-intents/${target.id}`, {
      apiKey: intentReader,
    });
    const right = await createIntent({ ...card, cvc: '123' });
    const wrong = await createIntent({ ...card, number: uniqueCardNumber(), cvc: '123' });
    // Nothing the reader got can be set beside the guesses' answers to tell them apart.
    const seen = JSON.stringify(read.body);
    expect(seen).not.toContain(right.fingerprint!);
    expect(seen).not.toContain(wrong.fingerprint!);
  });

  it('converting a customer’s intent answers a masked key what its read shows, not the card’s fingerprint', async () => {
    const intent = await createIntent(card);
    const made = await env.tenant.client.request<Intent>('POST', '/tokens', {
      body: { token_intent_id: intent.id },
      apiKey: maskedConverter,
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.fingerprint).toBeUndefined();
    expect(made.body.card?.bin).toBe(number.slice(0, 6));
    const read = await env.tenant.client.request<Intent>('GET', `/tokens/${made.body.id}`, {
      apiKey: maskedConverter,
    });
    expect(read.body.fingerprint).toBeUndefined();
    expect(read.body.card?.bin).toBe(number.slice(0, 6));
  });
});
