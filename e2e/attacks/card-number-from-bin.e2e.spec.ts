// The attacker holds a key that may see a card only masked (a support tool: `token:read` masked on
// /pci/, with `token:search` and `token:create` there), or one that may only search /pci/ (its GET
// is a 403). Every card answer used to show an 8-digit BIN and the last four: with the Luhn check
// that leaves 1,000 candidates for a 16-digit number, and one `data:<candidate>` search per
// candidate (or one deduplicated create per candidate, or the fingerprint of the tenant's public
// key's create of each candidate) confirms the right one. Each answer it gets must be the same for
// the right number and a wrong one; the masked key sees the first six only, and no fingerprint.
import { beforeAll, describe, expect, it } from 'vitest';
import { passesLuhn } from '@tokenvault/contracts';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  card?: { bin?: string; last4?: string };
}
interface Page {
  data: Token[];
}

/** Another Luhn-valid number with the same first eight and last four: what the attacker's candidates are. */
function wrongCandidate(number: string): string {
  for (let middle = 0; middle < 10_000; middle++) {
    const candidate = number.slice(0, 8) + String(middle).padStart(4, '0') + number.slice(12);
    if (candidate !== number && passesLuhn(candidate)) return candidate;
  }
  throw new Error('no candidate');
}

describe('attack: a masked or search-only key confirms a card number from its BIN and last four', () => {
  const env = useStack();
  const number = uniqueCardNumber();
  const wrong = wrongCandidate(number);
  const card = (candidate: string) => ({ number: candidate, expiration_month: 7, expiration_year: 2033 });
  let cardId: string;
  let maskedKey: string;
  let searchOnlyKey: string;

  beforeAll(async () => {
    const owner = env.tenant.client;
    const created = await owner.request<Token>('POST', '/tokens', {
      body: { type: 'card', data: card(number), search_indexes: ['{{ data.number }}'] },
    });
    expect(created.status).toBe(201);
    cardId = created.body.id;
    maskedKey = (
      await owner.applications.create({
        name: 'support tool',
        type: 'private',
        rules: [
          {
            container: '/pci/',
            transform: 'mask',
            permissions: ['token:read', 'token:search', 'token:create'],
          },
        ],
      })
    ).key;
    searchOnlyKey = (
      await owner.applications.create({
        name: 'searcher',
        type: 'private',
        rules: [{ container: '/pci/', permissions: ['token:search'] }],
      })
    ).key;
  });

  it('the masked key sees the first six and the last four, never eight', async () => {
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${cardId}`, { apiKey: maskedKey });
    expect(read.status).toBe(200);
    expect(read.body.card?.last4).toBe(number.slice(-4));
    expect(read.body.card?.bin).toBe(number.slice(0, 6));
    expect(JSON.stringify(read.body)).not.toContain(number.slice(0, 7));
  });

  it('data: searches answer the right number as they answer a wrong one, to both keys', async () => {
    for (const apiKey of [maskedKey, searchOnlyKey]) {
      for (const [path, extra] of [
        ['/tokens/search', {}],
        ['/v2/tokens/search', {}],
      ] as const) {
        const answer = async (candidate: string) => {
          const found = await env.tenant.client.request<Page>('POST', path, {
            body: { query: `data:${candidate}`, ...extra },
            apiKey,
          });
          return { status: found.status, ids: found.body.data.map((token) => token.id) };
        };
        const right = await answer(number);
        expect(right.ids, `${path}: the right number finds the card`).not.toContain(cardId);
        expect(right).toEqual(await answer(wrong));
      }
    }
  });

  it('the public key’s create of the right number gives a fingerprint the masked key never sees', async () => {
    const publicKey = (
      await env.tenant.client.applications.create({
        name: 'checkout page',
        type: 'public',
        permissions: ['token:create'],
      })
    ).key;
    const guess = await env.tenant.client.request<{ fingerprint: string }>('POST', '/tokens', {
      body: { type: 'card', data: card(number) },
      apiKey: publicKey,
    });
    expect(guess.status).toBe(201);
    const answers = [
      await env.tenant.client.request('GET', `/tokens/${cardId}`, { apiKey: maskedKey }),
      await env.tenant.client.request('GET', '/tokens', {
        query: { include_data: 'false' },
        apiKey: maskedKey,
      }),
      await env.tenant.client.request('GET', '/v2/tokens', { apiKey: maskedKey }),
      await env.tenant.client.request('POST', '/v2/tokens/search', {
        body: { query: '' },
        apiKey: maskedKey,
      }),
      await env.tenant.client.request('POST', '/v2/tokens/search', {
        body: { query: '' },
        apiKey: searchOnlyKey,
      }),
    ];
    for (const answer of answers) {
      expect(JSON.stringify(answer.body), 'the card’s fingerprint equals the guess’s').not.toContain(
        guess.body.fingerprint,
      );
    }
  });

  it('a deduplicated create answers the right number as it answers a wrong one', async () => {
    const create = async (candidate: string) => {
      const made = await env.tenant.client.request<Token>('POST', '/tokens', {
        body: { type: 'card', data: card(candidate), deduplicate_token: true },
        apiKey: maskedKey,
      });
      return made;
    };
    const right = await create(number);
    const other = await create(wrong);
    expect(right.body.id, 'the deduplicated create answered the card').not.toBe(cardId);
    expect(right.status).toBe(other.status);
  });
});
