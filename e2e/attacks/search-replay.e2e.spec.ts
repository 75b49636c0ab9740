// A key that searches tokens (a support tool, a reconciliation job) sends its searches under an
// Idempotency-Key, as clients do for every POST. Later the card is deleted (its data shredded), or
// the key's rule on /pci/ is narrowed to `mask`. The attacker, holding that key (or a copy of it),
// sends the same search again under the same Idempotency-Key: the answer kept from the first
// search must not come back with the full number and the CVC, through either search (v1 pages,
// v2 cursor).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenvaultClient } from '@tokenvault/sdk';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  status?: number;
  type?: string;
  detail?: string;
  data?: { id: string; data?: { number?: string; cvc?: string } }[];
}

const searches = [
  { name: 'POST /v2/tokens/search', path: '/v2/tokens/search' },
  { name: 'POST /tokens/search', path: '/tokens/search' },
] as const;

describe('attack: a search answer replayed under its Idempotency-Key outlives what it showed', () => {
  const env = useStack();
  const revealing = [{ container: '/', permissions: ['token:read', 'token:search'] }];
  const masking = [
    { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read', 'token:search'] },
    { container: '/', priority: 2, permissions: ['token:read', 'token:search'] },
  ];
  let applicationId: string;
  let searcher: TokenvaultClient;

  beforeAll(async () => {
    const created = await env.tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'Reconciliation', type: 'private', rules: revealing },
    });
    expect(created.status).toBe(201);
    applicationId = created.body.id;
    searcher = env.tenant.client.withKey(created.body.key);
  });

  /** A card of its own (marked so that a search finds it alone), with a CVC. */
  const newCard = async () => {
    const number = uniqueCardNumber();
    const cvc = String(100 + (randomBytes(2).readUInt16BE() % 900));
    const marker = `replay-${randomBytes(6).toString('hex')}`;
    const card = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 4, expiration_year: 2031, cvc },
        metadata: { marker },
      },
    });
    expect(card.status).toBe(201);
    return { id: card.body.id, number, cvc, query: `metadata.marker:${marker}` };
  };

  const search = (path: string, query: string, key: string) =>
    searcher.request<Answer>('POST', path, { body: { query }, headers: { 'idempotency-key': key } });

  /** The first search answers the card in full: what a replay must not give back later. */
  const searchedInFull = async (path: string, card: Awaited<ReturnType<typeof newCard>>) => {
    const key = `search-${randomBytes(8).toString('hex')}`;
    const first = await search(path, card.query, key);
    expect(first.status).toBe(200);
    expect(first.body.data?.map((token) => token.id)).toEqual([card.id]);
    expect(first.body.data?.[0]?.data?.number).toBe(card.number);
    return key;
  };

  const expectNothingOf = (
    replayed: { status: number; body: Answer },
    card: { number: string; cvc: string },
  ) => {
    const text = JSON.stringify(replayed.body);
    expect(text).not.toContain(card.number);
    expect(text).not.toContain(`"cvc":"${card.cvc}"`);
    // Not run again under the key either (it would answer what the key may see now): a 409 that
    // says why, naming the first answer's status; a new key runs the search.
    expect(replayed.status).toBe(409);
    expect(replayed.body.type).toMatch(/idempotency-response-not-kept$/);
    expect(replayed.body.detail).toContain('200');
    expect(replayed.body.detail).toContain('token data');
  };

  for (const { name, path } of searches) {
    it(`${name} replayed after the token’s deletion does not answer its number or CVC`, async () => {
      const card = await newCard();
      const key = await searchedInFull(path, card);
      expect((await env.tenant.client.request('DELETE', `/tokens/${card.id}`)).status).toBe(204);

      expectNothingOf(await search(path, card.query, key), card);
      const again = await search(path, card.query, `${key}-new`);
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual([]);
    });

    it(`${name} replayed after the key’s rule on /pci/ became mask does not answer the number or CVC`, async () => {
      const card = await newCard();
      const key = await searchedInFull(path, card);
      const narrowed = await env.tenant.client.request('PUT', `/applications/${applicationId}`, {
        body: { name: 'Reconciliation', rules: masking },
      });
      expect(narrowed.status).toBe(200);
      try {
        expectNothingOf(await search(path, card.query, key), card);
        const again = await search(path, card.query, `${key}-new`);
        expect(again.status).toBe(200);
        expect(JSON.stringify(again.body)).not.toContain(card.number);
      } finally {
        const restored = await env.tenant.client.request('PUT', `/applications/${applicationId}`, {
          body: { name: 'Reconciliation', rules: revealing },
        });
        expect(restored.status).toBe(200);
      }
    });
  }
});
