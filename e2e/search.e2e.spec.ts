// Token search over HTTP, the whole service running (both projection modes): by a search index,
// by metadata, by fingerprint; results opened as reads (on record in the audit log); a key that
// may only search gets the tokens without their data.
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { useStack } from './support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  fingerprint: string;
}
interface Page {
  pagination: { page_size: number; next?: string | null; page_number?: number };
  data: Token[];
}

describe('token search', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const create = async (body: Record<string, unknown>, apiKey?: string) => {
    const response = await env.tenant.client.request<Token>('POST', '/tokens', {
      body,
      ...(apiKey ? { apiKey } : {}),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body;
  };
  const search = async (query: string, apiKey?: string) => {
    const response = await env.tenant.client.request<Page>('POST', '/v2/tokens/search', {
      body: { query },
      ...(apiKey ? { apiKey } : {}),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  };

  it('finds a customer’s card by the last four of its number, with metadata, and records the read', async () => {
    const customer = `c-${Date.now()}`;
    const indexes = ['{{ data.number | last4 }}'];
    const mine = await create({
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 4, expiration_year: 2031 },
      search_indexes: indexes,
      metadata: { customer },
    });
    await create({
      type: 'card',
      data: { number: '5555555555554444', expiration_month: 4, expiration_year: 2031 },
      search_indexes: indexes,
      metadata: { customer },
    });
    const found = await search(`data:4242 AND metadata.customer:${customer}`);
    expect(found.data.map((token) => token.id)).toEqual([mine.id]);
    expect(found.data[0]!.data).toMatchObject({ number: '4242424242424242' });
    expect((await search(`metadata.customer:${customer}`)).data).toHaveLength(2);
    expect((await search(`data:0000 AND metadata.customer:${customer}`)).data).toEqual([]);

    await eventually(async () => {
      const logs = await env.tenant.client.request<{ data: { operation: string }[] }>('GET', '/logs', {
        query: { entity_id: mine.id, size: 100 },
      });
      expect(logs.body.data.filter((log) => log.operation === 'read')).toHaveLength(2);
    });
  });

  it('finds tokens by fingerprint, and by the fingerprint expression’s idea of equal data', async () => {
    const first = await create({ data: 'Ann@Example.com', fingerprint_expression: '{{ data | downcase }}' });
    const second = await create({ data: 'ann@example.com', fingerprint_expression: '{{ data | downcase }}' });
    expect(second.fingerprint).toBe(first.fingerprint);
    const found = await search(`fingerprint:${first.fingerprint}`);
    expect(found.data.map((token) => token.id)).toEqual([second.id, first.id]);
    // Asked per call, deduplication hands the first token back.
    const again = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        data: 'ANN@example.com',
        fingerprint_expression: '{{ data | downcase }}',
        deduplicate_token: true,
      },
    });
    expect(again.status).toBe(200);
    expect([first.id, second.id]).toContain(again.body.id);
  });

  it('pages by cursor and by page; a key with only token:search sees no data', async () => {
    const batch = `p-${Date.now()}`;
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      ids.push((await create({ data: `${batch}-${index}`, metadata: { batch } })).id);
    }
    const first = await env.tenant.client.request<Page>('POST', '/v2/tokens/search', {
      body: { query: `metadata.batch:${batch}`, size: 2 },
    });
    expect(first.body.data.map((token) => token.id)).toEqual([ids[2], ids[1]]);
    const rest = await env.tenant.client.request<Page>('POST', '/v2/tokens/search', {
      body: { query: `metadata.batch:${batch}`, size: 2, start: first.body.pagination.next },
    });
    expect(rest.body.data.map((token) => token.id)).toEqual([ids[0]]);
    const paged = await env.tenant.client.request<Page>('POST', '/tokens/search', {
      body: { query: `metadata.batch:${batch}`, page: 2, size: 2 },
    });
    expect(paged.body).toMatchObject({ pagination: { page_number: 2, page_size: 2 } });
    expect(paged.body.data.map((token) => token.id)).toEqual([ids[0]]);

    const searcher = await env.tenant.client.applications.create({
      name: 'searcher',
      type: 'private',
      permissions: ['token:search'],
    });
    const blind = await search(`metadata.batch:${batch}`, searcher.key);
    expect(blind.data).toHaveLength(3);
    for (const token of blind.data) expect(token).not.toHaveProperty('data');
  });
});
