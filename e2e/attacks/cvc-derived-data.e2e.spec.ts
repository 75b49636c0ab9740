// A card's CVC is removed from its data CARD_CVC_TTL_SECONDS after it was given, but the tenant's
// integration also derived values from it while it was there: a search index on `data.cvc`, a
// unique index on it, a fingerprint expression of it (with deduplication on). The attackers come
// after the removal: (a) a key with `token:search` guesses the CVC (at most 900 three-digit
// values) through `data:<guess>`; (b) a public key (it ships in a browser) creates its own card
// with a guessed CVC and the same fingerprint expression, and compares fingerprints, or finds
// out through deduplication; (c) a create with a unique index on the CVC tries each guess until
// it is refused (409). Each would find the removed CVC again if what was derived from it stayed.
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  fingerprint?: string;
  data?: Record<string, unknown>;
  search_indexes?: unknown[];
  fingerprint_expression?: string;
}

describe('attack: what was derived from a card’s CVC, after the CVC was removed', () => {
  const env = useStack({ CARD_CVC_TTL_SECONDS: '3' });
  const cvc = String(100 + Math.floor(Math.random() * 900));
  const cvcIndex = '{{ data.cvc }}';
  const marker = `cvc-derived-${cvc}-${Date.now()}`;
  let targetId: string;
  let dedupedId: string;
  let searchKey: string;
  let publicKey: string;
  const card = (extra: Record<string, unknown> = {}) => ({
    number: uniqueCardNumber(),
    expiration_month: 9,
    expiration_year: 2031,
    cvc,
    ...extra,
  });

  beforeAll(async () => {
    const client = env.tenant.client;
    // The tenant's own card: the CVC searchable, unique, and its fingerprint.
    const target = await client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: card(),
        search_indexes: [{ expression: cvcIndex, unique: true }],
        fingerprint_expression: cvcIndex,
        metadata: { marker },
      },
    });
    expect(target.status).toBe(201);
    targetId = target.body.id;
    // Another card, deduplicated by its CVC (it holds the claim on that fingerprint).
    const deduped = await client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: card({ expiration_month: 10 }),
        containers: ['/pci/high/deduped/'],
        fingerprint_expression: cvcIndex,
        deduplicate_token: true,
        metadata: { marker },
      },
    });
    expect(deduped.status).toBe(201);
    dedupedId = deduped.body.id;
    const searcher = await client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Search only', type: 'private', permissions: ['token:search'] },
    });
    expect(searcher.status).toBe(201);
    searchKey = searcher.body.key;
    const browser = await client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Card form', type: 'public', permissions: ['token:create'] },
    });
    expect(browser.status).toBe(201);
    publicKey = browser.body.key;

    // While the CVC is there, it is found by its index (the feature works).
    const found = await client.request<{ data: Token[] }>('POST', '/v2/tokens/search', {
      body: { query: `data:${cvc}` },
    });
    expect(found.body.data.map((token) => token.id)).toContain(targetId);

    // Its time comes, for both cards, and the read model has it (PROJECTIONS=async: it may trail
    // the worker's append; the list reads the read model's ciphertext).
    await eventually(async () => {
      for (const id of [targetId, dedupedId]) {
        const read = await client.request<Token>('GET', `/tokens/${id}`);
        expect(read.body.data).not.toHaveProperty('cvc');
      }
      const listed = await client.request<{ data: Token[] }>('GET', '/v2/tokens', {
        query: { metadata: JSON.stringify({ marker }) },
      });
      expect(listed.body.data).toHaveLength(2);
      for (const token of listed.body.data) expect(token.data).not.toHaveProperty('cvc');
    }, 20_000);
  });

  it('(a) data:<the CVC> finds nothing, for a search-only key and for the tenant’s own key', async () => {
    for (const apiKey of [searchKey, undefined]) {
      for (const path of ['/v2/tokens/search', '/tokens/search']) {
        const searched = await env.tenant.client.request<{ data: Token[] }>('POST', path, {
          body: { query: `data:${cvc}` },
          ...(apiKey ? { apiKey } : {}),
        });
        expect(searched.status, path).toBe(200);
        expect(
          searched.body.data.map((token) => token.id),
          path,
        ).not.toContain(targetId);
      }
    }
  });

  it('(b) the card’s fingerprint is no longer its CVC’s: a public key’s card with that CVC gets another one', async () => {
    const mine = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { type: 'card', data: card(), fingerprint_expression: cvcIndex },
      apiKey: publicKey,
    });
    expect(mine.status).toBe(201);
    const target = await env.tenant.client.request<Token>('GET', `/tokens/${targetId}`);
    expect(target.body.fingerprint).toBeDefined();
    expect(target.body.fingerprint).not.toBe(mine.body.fingerprint);
    // Nor is it found by that fingerprint.
    const byFingerprint = await env.tenant.client.request<{ data: Token[] }>('POST', '/v2/tokens/search', {
      body: { query: `fingerprint:${mine.body.fingerprint}` },
    });
    expect(byFingerprint.body.data.map((token) => token.id)).not.toContain(targetId);
    // The expression that now gives nothing went with it: it named the removed field.
    expect(target.body.fingerprint_expression).toBeUndefined();
  });

  it('(b) deduplication by the CVC no longer answers the card that held it', async () => {
    const again = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: card({ expiration_month: 11 }),
        containers: ['/pci/high/deduped/'],
        fingerprint_expression: cvcIndex,
        deduplicate_token: true,
      },
    });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(dedupedId);
  });

  it('(c) a unique index on the CVC no longer refuses that CVC (the claim went with it)', async () => {
    const probe = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: card(),
        search_indexes: [{ expression: cvcIndex, unique: true }],
      },
    });
    expect(probe.status).toBe(201);
  });
});
