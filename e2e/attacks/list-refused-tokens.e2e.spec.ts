// The attacker holds a key refused a token (GET is a 403) and lists tokens instead: the list
// filtered by SQL containers only (every container its rules name, and the higher impact levels of
// a rule's classification), never by the read decision, so `include_data=false` answered the
// refused token with its metadata and card summary. A key that may only search (its GET is a 403
// too) got each result's card summary; a child list counted refused children in its total. Every
// list must show only what the key's read decision on each token allows.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  card?: unknown;
  metadata?: Record<string, string>;
}
interface Page {
  data: Token[];
  pagination?: { next?: string | null };
}

describe('attack: a list answers tokens the key is refused', () => {
  const env = useStack();
  const marker = `refused-${Date.now()}`;
  let refusedId: string;
  let cardId: string;
  const number = uniqueCardNumber();

  beforeAll(async () => {
    const owner = env.tenant.client;
    // In /general/high/, but private at the moderate level: a rule on /general/low/ reads
    // /general/moderate/ tokens by their restriction policy, not this one (403).
    const refused = await owner.request<Token>('POST', '/tokens', {
      body: {
        data: 'salary 250000',
        containers: ['/general/high/'],
        privacy: { impact_level: 'moderate' },
        metadata: { marker, employee: 'e-7' },
      },
    });
    expect(refused.status).toBe(201);
    refusedId = refused.body.id;
    const card = await owner.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 3, expiration_year: 2034 },
        metadata: { marker },
      },
    });
    expect(card.status).toBe(201);
    cardId = card.body.id;
  });

  it('a token refused on GET is in no list of that key, with or without data', async () => {
    const lowReader = (
      await env.tenant.client.applications.create({
        name: 'low reader',
        type: 'private',
        rules: [{ container: '/general/low/', permissions: ['token:read'] }],
      })
    ).key;
    const get = await env.tenant.client.request('GET', `/tokens/${refusedId}`, { apiKey: lowReader });
    expect(get.status).toBe(403);
    for (const include_data of ['false', 'true']) {
      const list = await env.tenant.client.request<Page>('GET', '/tokens', {
        query: { 'metadata.marker': marker, include_data },
        apiKey: lowReader,
      });
      expect(list.status).toBe(200);
      expect(
        list.body.data.map((token) => token.id),
        `GET /tokens?include_data=${include_data}`,
      ).not.toContain(refusedId);
      expect(JSON.stringify(list.body)).not.toContain('e-7');
    }
    const v2 = await env.tenant.client.request<Page>('GET', '/v2/tokens', {
      query: { metadata: JSON.stringify({ marker }) },
      apiKey: lowReader,
    });
    expect(v2.status).toBe(200);
    expect(v2.body.data.map((token) => token.id)).not.toContain(refusedId);
  });

  it('a child list neither shows nor counts a child the key is refused', async () => {
    const owner = env.tenant.client;
    const lowReader = (
      await owner.applications.create({
        name: 'low child reader',
        type: 'private',
        rules: [{ container: '/general/low/', permissions: ['token:read'] }],
      })
    ).key;
    const parent = await owner.request<Token>('POST', '/tokens', {
      body: { data: 'employee e-7', containers: ['/general/low/'] },
    });
    const readable = await owner.request<Token>('POST', '/tokens', {
      body: { data: 'desk 12', containers: ['/general/low/'] },
    });
    for (const child of [refusedId, readable.body.id]) {
      expect((await owner.request('POST', `/tokens/${parent.body.id}/children/${child}`)).status).toBe(204);
    }
    const children = await owner.request<Page & { pagination: { total_items: number } }>(
      'GET',
      `/tokens/${parent.body.id}/children`,
      { apiKey: lowReader },
    );
    expect(children.status).toBe(200);
    expect(children.body.data.map((token) => token.id)).toEqual([readable.body.id]);
    expect(children.body.pagination.total_items, 'the refused child is counted').toBe(1);
  });

  it('a key that may only search gets no card summary with its results', async () => {
    const searcher = (
      await env.tenant.client.applications.create({
        name: 'searcher',
        type: 'private',
        rules: [{ container: '/pci/', permissions: ['token:search'] }],
      })
    ).key;
    expect((await env.tenant.client.request('GET', `/tokens/${cardId}`, { apiKey: searcher })).status).toBe(
      403,
    );
    for (const path of ['/tokens/search', '/v2/tokens/search']) {
      const found = await env.tenant.client.request<Page>('POST', path, {
        body: { query: `metadata.marker:${marker}` },
        apiKey: searcher,
      });
      expect(found.status).toBe(200);
      const mine = found.body.data.find((token) => token.id === cardId);
      expect(mine, path).toBeDefined();
      expect(mine, path).not.toHaveProperty('card');
      expect(JSON.stringify(found.body), path).not.toContain(number.slice(-4));
    }
  });
});
