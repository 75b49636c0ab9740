import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DataOf } from '@tokenvault/cqrs';
import { storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import { tokenReadsStream, tokenStream, type TokensContextEvent } from '../domain/tokens.events.ts';
import { tokenSearchRoutes } from './search.routes.ts';
import { tokenAccess } from './token-access.ts';
import { tokenResourceRoutes } from './tokens.routes.ts';
import { tokenRouteApp } from '../testing/token-route-app.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const all = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search'];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, randomUUID(), all),
  /** May search, not read: results come without their data. */
  searcher: testPrincipal(tenant, randomUUID(), ['token:search']),
  reader: testPrincipal(tenant, randomUUID(), ['token:read']),
  /** Searches everything; reads /pci/ masked, everything else revealed. */
  masker: testPrincipal(tenant, randomUUID(), [], {
    rules: [
      { container: '/', priority: 2, transform: 'reveal', permissions: ['token:read', 'token:search'] },
      { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read', 'token:search'] },
    ],
  }),
  otherTenant: testPrincipal(otherTenant, randomUUID(), all),
};

interface Page {
  pagination: { next?: string | null; page_size: number; page_number?: number };
  data: { id: string; data?: unknown; search_indexes?: unknown }[];
}

describe('token search routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const { side, api } = tokenRouteApp({
    tenants: [tenant, otherTenant],
    callers,
    routes: (deps) => {
      const access = tokenAccess(deps);
      return [...tokenResourceRoutes(deps, access), ...tokenSearchRoutes(deps, access)];
    },
  });

  const create = async (body: Record<string, unknown>, caller = 'admin', status = 201) =>
    (await api.post('/tokens').set('svc-api-key', caller).send(body).expect(status)).body as { id: string };
  const searchV2 = async (query: string, caller = 'admin', extra: Record<string, unknown> = {}) =>
    (
      await api
        .post('/v2/tokens/search')
        .set('svc-api-key', caller)
        .send({ query, ...extra })
        .expect(200)
    ).body as Page;
  const readsOf = async (tokenId: string) => {
    const shards = await Promise.all(
      [0, 1, 2, 3].map((shard) => storedEvents(side.store, tokenReadsStream(shard))),
    );
    return shards
      .flat()
      .flatMap((event) => (event.data as DataOf<TokensContextEvent, 'TokensReadBatch'>).reads)
      .filter((recorded) => recorded.tokens.some((read) => read.token_id === tokenId));
  };

  it('finds a token by the value of any of its search indexes, whose event holds HMACs only; the result is a read on record', async () => {
    const ssn = '123-45-6789';
    const token = await create({
      type: 'social_security_number',
      data: ssn,
      search_indexes: ['{{ data | replace: "-", "" }}', '{{ data | last4 }}'],
      metadata: { customer: 'c-42', region: 'eu' },
    });
    expect(token).toMatchObject({ search_indexes: ['{{ data | replace: "-", "" }}', '{{ data | last4 }}'] });
    const [created] = await storedEvents(side.store, tokenStream(tenant, token.id));
    const stored = JSON.stringify(created!.data);
    for (const plain of [ssn, '123456789', '6789']) expect(stored).not.toContain(plain);
    expect((created!.data as { search_index_values: string[] }).search_index_values).toHaveLength(2);

    for (const query of ['data:6789', 'data:123456789', 'data:"6789" AND metadata.customer:c-42']) {
      const page = await searchV2(query);
      expect(
        page.data.map((found) => found.id),
        query,
      ).toEqual([token.id]);
      expect(page.data[0]!.data).toBe(ssn);
    }
    expect(await readsOf(token.id)).toHaveLength(3);
    expect((await searchV2('data:123-45-6789')).data).toEqual([]);
    expect((await searchV2('data:6789 AND metadata.customer:c-1')).data).toEqual([]);
    // Every metadata entry of the query must match, not just one of them.
    const both = await searchV2('data:6789 AND metadata.customer:c-42 AND metadata.region:eu');
    expect(both.data.map((found) => found.id)).toEqual([token.id]);
    expect((await searchV2('data:6789 AND metadata.customer:c-42 AND metadata.region:us')).data).toEqual([]);
    // The older pages shape.
    const paged = await api
      .post('/tokens/search')
      .set('svc-api-key', 'admin')
      .send({ query: 'data:6789', page: 1, size: 10 })
      .expect(200);
    expect(paged.body).toMatchObject({
      pagination: { page_number: 1, page_size: 10 },
      data: [{ id: token.id }],
    });
  });

  it('pages by cursor, newest first, and by fingerprint and type', async () => {
    const ids = [];
    for (let index = 0; index < 3; index++) {
      ids.push(
        (await create({ data: `paged-${index}`, search_indexes: ['{{ data | truncate: 5, "" }}'] })).id,
      );
    }
    const first = await searchV2('data:paged AND type:token', 'admin', { size: 2 });
    expect(first.data.map((found) => found.id)).toEqual([ids[2], ids[1]]);
    const second = await searchV2('data:paged AND type:token', 'admin', {
      size: 2,
      start: first.pagination.next,
    });
    expect(second.data.map((found) => found.id)).toEqual([ids[0]]);
    expect(second.pagination.next).toBeUndefined();
    const one = (await api.get(`/tokens/${ids[0]}`).set('svc-api-key', 'admin').expect(200)).body as {
      fingerprint: string;
    };
    expect((await searchV2(`fingerprint:${one.fingerprint}`)).data.map((found) => found.id)).toEqual([
      ids[0],
    ]);
    expect((await searchV2('data:paged AND type:card')).data).toEqual([]);
  });

  it('a key with token:search but not token:read finds tokens by metadata without their data, and reads nothing; data: finds nothing for it', async () => {
    const token = await create({
      data: 'search-only-1111',
      search_indexes: ['{{ data | last4 }}'],
      metadata: { owner: 'search-only' },
    });
    const page = await searchV2('metadata.owner:search-only', 'searcher');
    expect(page.data.map((found) => found.id)).toEqual([token.id]);
    expect(page.data[0]).not.toHaveProperty('data');
    // A term on the data matches only tokens the key reveals: a match would confirm the value.
    expect((await searchV2('data:1111', 'searcher')).data).toEqual([]);
    expect(await readsOf(token.id)).toEqual([]);
    expect((await searchV2('data:1111')).data.map((found) => found.id)).toEqual([token.id]);
  });

  it('data: and fingerprint: match only tokens the key reveals; the ones kept out move no page or cursor', async () => {
    const value = `shared-${randomUUID()}`;
    const ids: string[] = [];
    // Newest first: revealed, masked, revealed, masked, revealed.
    for (const container of ['/pci/low/', '/general/', '/pci/high/', '/general/', '/pci/low/', '/general/']) {
      ids.unshift(
        (await create({ data: value, containers: [container], search_indexes: ['{{ data }}'] })).id,
      );
    }
    const revealed = ids.filter((_, index) => index % 2 === 0);
    const all = (await searchV2(`data:${value}`)).data.map((found) => found.id);
    expect(all).toEqual(ids);
    expect((await searchV2(`data:${value}`, 'masker')).data.map((found) => found.id)).toEqual(revealed);
    // By cursor, one at a time: each revealed token once, then no next page.
    const seen: string[] = [];
    let start: string | undefined;
    do {
      const page = await searchV2(`data:${value}`, 'masker', { size: 1, ...(start ? { start } : {}) });
      seen.push(...page.data.map((found) => found.id));
      start = page.pagination.next ?? undefined;
    } while (start);
    expect(seen).toEqual(revealed);
    const second = await api
      .post('/tokens/search')
      .set('svc-api-key', 'masker')
      .send({ query: `data:${value}`, page: 2, size: 2 })
      .expect(200);
    expect((second.body as Page).data.map((found) => found.id)).toEqual([revealed[2]]);
    expect((second.body as { pagination: { next: string | null } }).pagination.next).toBeNull();
    // A fingerprint is a term on the data too; metadata-free searches list the masked ones.
    const maskedOne = ids[1]!;
    const { fingerprint } = (await api.get(`/tokens/${maskedOne}`).set('svc-api-key', 'admin').expect(200))
      .body as { fingerprint: string };
    const byPrint = await searchV2(`fingerprint:${fingerprint}`, 'masker');
    expect(byPrint.data.map((found) => found.id)).toEqual(revealed);
    expect((await searchV2(`fingerprint:${fingerprint}`, 'searcher')).data).toEqual([]);
  });

  it('never matches another tenant’s token with the same indexed value', async () => {
    await create({ data: 'shared-value', search_indexes: ['{{ data }}'] }, 'otherTenant');
    const mine = await create({ data: 'shared-value', search_indexes: ['{{ data }}'] });
    expect((await searchV2('data:shared-value')).data.map((found) => found.id)).toEqual([mine.id]);
  });

  it('a unique index refuses a second token of the tenant with the same value, until the first is deleted', async () => {
    const body = {
      data: { email: 'A@x.io' },
      search_indexes: [{ expression: '{{ data.email | downcase }}', unique: true }],
    };
    const first = await create(body);
    expect(first).toMatchObject({
      search_indexes: [{ expression: '{{ data.email | downcase }}', unique: true }],
    });
    const refused = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ ...body, data: { email: 'a@X.io' } })
      .expect(409);
    expect(JSON.stringify(refused.body)).not.toContain(first.id);
    // Another tenant has its own values.
    await create(body, 'otherTenant');
    await api.delete(`/tokens/${first.id}`).set('svc-api-key', 'admin').expect(204);
    await create(body);
  });

  it('an update re-evaluates the indexes on the new data; fingerprint_expression and deduplicate_token decide deduplication', async () => {
    const token = await create({ data: 'before-0001', search_indexes: ['{{ data | last4 }}'] });
    await api
      .patch(`/tokens/${token.id}`)
      .set('svc-api-key', 'admin')
      .send({ data: 'after-0002' })
      .expect(200);
    expect((await searchV2('data:0001')).data).toEqual([]);
    expect((await searchV2('data:0002')).data.map((found) => found.id)).toEqual([token.id]);

    const email = { fingerprint_expression: '{{ data | downcase }}', deduplicate_token: true };
    const original = await create({ data: 'Ann@Example.com', ...email });
    const again = await create({ data: 'ann@example.COM', ...email }, 'admin', 200);
    expect(again.id).toBe(original.id);
    await create({ data: 'ann@example.COM', ...email, deduplicate_token: false });
  });

  it('a query on a field that is not searchable is a 400 naming body.query; 401 without a key; 403 without token:search', async () => {
    const refused = await api
      .post('/v2/tokens/search')
      .set('svc-api-key', 'admin')
      .send({ query: 'data:1 AND number:4242' })
      .expect(400);
    expect(refused.body).toMatchObject({
      status: 400,
      errors: { 'body.query': [expect.stringContaining('number is not searchable')] },
    });
    await api.post('/v2/tokens/search').send({ query: 'data:1' }).expect(401);
    const forbidden = await api
      .post('/v2/tokens/search')
      .set('svc-api-key', 'reader')
      .send({ query: '' })
      .expect(403);
    expect(forbidden.body).toMatchObject({ detail: expect.stringContaining('token:search') });
    await api.post('/tokens/search').set('svc-api-key', 'reader').send({ query: '' }).expect(403);
  });

  it('an index expression that fails is a 400 naming it, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ data: 'x', search_indexes: ['{{ data }}', '{{ data | nosuchfilter }}'] })
      .expect(400);
    expect(response.body).toMatchObject({
      errors: { 'body.search_indexes.1': ['Unknown filter nosuchfilter'] },
    });
    expect(await side.store.headPosition()).toEqual(head);
  });
});
