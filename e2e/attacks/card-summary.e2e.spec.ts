// A card's summary (`card`) is shown with the token's other fields as the key's read decision
// allows (a key that may only create sees its own card's, one that may only update none). It must
// never tell more of the number than PCI DSS lets show beside a masked number: the BIN (6 digits,
// 8 for numbers of 16 digits or more, to a key that may see the number) and the last four. The
// attacker holds such a key (or another tenant's) and reads every answer that carries the card,
// for cards of every length a card number has.
import { describe, expect, it } from 'vitest';
import { passesLuhn } from '@tokenvault/contracts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  card?: Record<string, unknown>;
}

/** A Luhn-valid number of this length with this prefix, random in between. */
function cardNumber(prefix: string, length: number): string {
  let body = prefix;
  while (body.length < length - 1) body += String(Math.floor(Math.random() * 10));
  return body + [...'0123456789'].find((digit) => passesLuhn(body + digit))!;
}

const summaryFields = ['bin', 'last4', 'brand', 'funding', 'expiration_month', 'expiration_year'];

describe('attack: a card’s summary tells more of the number than its BIN and last four', () => {
  const env = useStack();

  it('no answer that carries a card, to any key, holds more of the number outside its data', async () => {
    const owner = env.tenant.client;
    const updater = await owner.applications.create({
      name: 'updater',
      type: 'private',
      rules: [{ container: '/pci/', permissions: ['token:update'] }],
    });
    const creator = await owner.applications.create({
      name: 'creator',
      type: 'private',
      rules: [{ container: '/pci/', permissions: ['token:create'] }],
    });
    const parent = await owner.tokens.create({ data: 'parent of cards' });
    const other = await env.stack.createTenant('Other');
    const cards = [
      cardNumber('4', 13),
      cardNumber('36', 14),
      cardNumber('37', 15),
      cardNumber('4', 16),
      cardNumber('3528', 17),
      cardNumber('62', 18),
      cardNumber('6759', 19),
    ];
    for (const number of cards) {
      const binLength = number.length >= 16 ? 8 : 6;
      const cvc = number.startsWith('37') ? '1234' : '123';
      const data = { number, expiration_month: 5, expiration_year: 2032, cvc };
      /** Nothing beyond BIN and last four outside `data`, and a summary of those fields only. */
      const tellsNoMore = (what: string, body: unknown, id: string) => {
        const tokens = (
          Array.isArray((body as { data?: unknown }).data) ? (body as { data: Token[] }).data : [body]
        ) as Token[];
        const mine = tokens.filter((candidate) => candidate.id === id);
        expect(mine, what).toHaveLength(1);
        for (const token of mine) {
          const { data: _data, ...rest } = token;
          const text = JSON.stringify(rest);
          expect(text, `${what} (${number.length} digits)`).not.toContain(number.slice(0, binLength + 1));
          expect(text, `${what} (${number.length} digits)`).not.toContain(number.slice(-5));
          expect(
            Object.keys(token.card!).every((field) => summaryFields.includes(field)),
            what,
          ).toBe(true);
          expect(token.card!.bin, what).toBe(number.slice(0, binLength));
          expect(token.card!.last4, what).toBe(number.slice(-4));
          expect(text, what).not.toContain('"cvc"');
        }
      };

      // A key that may only create: its own answer.
      const created = await owner.request<Token>('POST', '/tokens', {
        body: { type: 'card', data, metadata: { length: String(number.length) } },
        apiKey: creator.key,
      });
      expect(created.status).toBe(201);
      expect(created.body.data).toBeUndefined();
      tellsNoMore('create', created.body, created.body.id);
      const id = created.body.id;
      // A key that may only update: the answer of its update, without the data, and without
      // the summary (it follows the key's read decision: none; issue 48).
      const updated = await owner.request<Token>('PATCH', `/tokens/${id}`, {
        body: { metadata: { touched: 'yes' } },
        apiKey: updater.key,
      });
      expect(updated.status).toBe(200);
      expect(updated.body.data).toBeUndefined();
      expect(updated.body.card).toBeUndefined();
      expect(JSON.stringify(updated.body)).not.toContain(number.slice(-4));
      // It may not read it: no summary comes with a 403, nor to another tenant with a 404.
      const refused = await owner.request('GET', `/tokens/${id}`, { apiKey: updater.key });
      expect(refused.status).toBe(403);
      expect(JSON.stringify(refused.body)).not.toContain(number.slice(-4));
      const theirs = await other.client.request('GET', `/tokens/${id}`);
      expect(theirs.status).toBe(404);
      expect(JSON.stringify(theirs.body)).not.toContain(number.slice(-4));
      // The reader's paths: get, both lists (with and without data), a child list.
      tellsNoMore('get', (await owner.request('GET', `/tokens/${id}`)).body, id);
      const query = { 'metadata.length': String(number.length) };
      tellsNoMore('list', (await owner.request('GET', '/tokens', { query })).body, id);
      tellsNoMore(
        'list without data',
        (await owner.request('GET', '/tokens', { query: { ...query, include_data: 'false' } })).body,
        id,
      );
      const v2 = await owner.request('GET', '/v2/tokens', {
        query: { metadata: JSON.stringify({ length: String(number.length) }) },
      });
      tellsNoMore('v2 list', v2.body, id);
      await owner.request('POST', `/tokens/${parent.id}/children/${id}`);
      tellsNoMore('children', (await owner.request('GET', `/tokens/${parent.id}/children`)).body, id);
    }
  });
});
