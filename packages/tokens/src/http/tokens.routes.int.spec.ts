import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DataOf } from '@tokenvault/cqrs';
import { storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import { tokenReadsStream, tokenStream, type TokensContextEvent } from '../domain/tokens.events.ts';
import { tokenAccess } from './token-access.ts';
import { tokenResourceRoutes } from './tokens.routes.ts';
import { tokenRouteApp } from '../testing/token-route-app.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const writes = ['token:create', 'token:read', 'token:update', 'token:delete'];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, writes),
  reader: testPrincipal(tenant, randomUUID(), ['token:read']),
  /** May create tokens under /pci/ only. */
  pciWriter: testPrincipal(tenant, randomUUID(), [], {
    rules: [{ container: '/pci/', permissions: ['token:create'] }],
  }),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes),
  /** Reads cards masked (its rule on /pci/ comes first), everything else revealed. */
  masker: testPrincipal(tenant, randomUUID(), [], {
    rules: [
      { container: '/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
      { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read'] },
    ],
  }),
  redactor: testPrincipal(tenant, randomUUID(), [], {
    rules: [{ container: '/', transform: 'redact', permissions: ['token:read'] }],
  }),
  /** Holds token:read on /pci/low/ only: pci/high tokens by their restriction policy. */
  pciLowReader: testPrincipal(tenant, randomUUID(), [], {
    rules: [{ container: '/pci/low/', permissions: ['token:read'] }],
  }),
};

const secret = 'the-secret-4242';

describe('token routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const { side, api } = tokenRouteApp({
    tenants: [tenant, otherTenant],
    callers,
    routes: (deps) => tokenResourceRoutes(deps, tokenAccess(deps)),
  });

  const create = async () => {
    const response = await api.post('/tokens').set('svc-api-key', 'admin').send({ data: secret }).expect(201);
    return response.body as { id: string };
  };
  /** The reads on record of one token: the reads of TokensReadBatch events that name it. */
  const readsOf = async (tokenId: string) => {
    const shards = await Promise.all(
      [0, 1, 2, 3].map((shard) => storedEvents(side.store, tokenReadsStream(shard))),
    );
    return shards
      .flat()
      .flatMap((event) => (event.data as DataOf<TokensContextEvent, 'TokensReadBatch'>).reads)
      .filter((recorded) => recorded.tokens.some((read) => read.token_id === tokenId));
  };

  it('POST /tokens appends TokenCreated (the data sealed) and answers without the data; GET opens it and puts the read on record', async () => {
    const response = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ type: 'token', data: secret, metadata: { order: 'o-1' } })
      .expect(201);
    const created = response.body as Record<string, unknown> & { id: string };
    expect(created).toMatchObject({
      tenant_id: tenant,
      type: 'token',
      metadata: { order: 'o-1' },
      containers: ['/general/high/'],
      created_by: actor,
    });
    expect(created).not.toHaveProperty('data');
    const events = await storedEvents(side.store, tokenStream(tenant, created.id));
    expect(events.map((event) => event.type)).toEqual(['TokenCreated']);
    expect(events[0]!.metadata).toMatchObject({ tenant_id: tenant, actor_id: actor });
    expect(JSON.stringify(events[0]!.data)).not.toContain(secret);
    expect(await readsOf(created.id)).toEqual([]);
    const read = await api.get(`/tokens/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual({ ...created, data: secret });
    expect(await readsOf(created.id)).toHaveLength(1);
  });

  it('a body the schema refuses is a 400 problem naming each field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ type: 'card', data: { number: '4242' }, colour: 'blue' })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    const fields = Object.keys((response.body as { errors: object }).errors);
    expect(fields).toEqual(expect.arrayContaining(['body.colour', 'body.data.number']));
    expect(JSON.stringify(response.body)).not.toContain('4242');
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('a card is answered with its privacy and summary, read back alike; a privacy below its type’s is a 400 naming the field', async () => {
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
    const response = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ type: 'card', data: card })
      .expect(201);
    const created = response.body as Record<string, unknown> & { id: string };
    expect(created).toMatchObject({
      privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
      card: { bin: '42424242', last4: '4242', brand: 'visa', expiration_month: 12, expiration_year: 2030 },
    });
    const read = await api.get(`/tokens/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual({ ...created, data: card });
    const refused = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ type: 'card', data: card, privacy: { impact_level: 'low' } })
      .expect(400);
    expect((refused.body as { errors: object }).errors).toEqual({
      'body.privacy.impact_level': ['Must be high or higher for a card token'],
    });
  });

  it('a list, with data or without, shows only tokens the key’s read decision gives access to', async () => {
    // In /pci/high/ but of general privacy: a rule on /pci/low/ does not read it by a restriction policy.
    const refused = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ data: secret, containers: ['/pci/high/'], metadata: { list: 'refused' } })
      .expect(201);
    const id = (refused.body as { id: string }).id;
    await api.get(`/tokens/${id}`).set('svc-api-key', 'pciLowReader').expect(403);
    for (const path of ['/tokens?include_data=false&size=100', '/tokens?size=100', '/v2/tokens?size=100']) {
      const listed = await api.get(path).set('svc-api-key', 'pciLowReader').expect(200);
      expect(
        (listed.body as { data: { id: string }[] }).data.map((token) => token.id),
        path,
      ).not.toContain(id);
    }
    const byAdmin = await api
      .get('/tokens?include_data=false&metadata.list=refused')
      .set('svc-api-key', 'admin');
    expect((byAdmin.body as { data: { id: string }[] }).data.map((token) => token.id)).toEqual([id]);
  });

  it('a unique search index is a 403 to a key that does not reveal every token, whatever the data', async () => {
    const body = {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
      search_indexes: ['{{ data.number | last4 }}', { expression: '{{ data.number }}', unique: true }],
    };
    const refused = await api.post('/tokens').set('svc-api-key', 'pciWriter').send(body).expect(403);
    expect(refused.body).toMatchObject({ errors: { 'body.search_indexes.1': [expect.any(String)] } });
    await api.post('/tokens').set('svc-api-key', 'admin').send(body).expect(201);
  });

  it('each read shows what the deciding rule allows: reveal, mask (no mask: no data), redact, by restriction policy', async () => {
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };
    const created = await api.post('/tokens').set('svc-api-key', 'admin').send({ type: 'card', data: card });
    const cardId = (created.body as { id: string }).id;
    const general = await create();
    const got = async (key: string, id: string) =>
      (await api.get(`/tokens/${id}`).set('svc-api-key', key).expect(200)).body as Record<string, unknown>;
    expect((await got('masker', general.id)).data).toEqual(secret);
    expect(await got('redactor', general.id)).not.toHaveProperty('data');
    const redacted = await got('redactor', cardId);
    expect(redacted).not.toHaveProperty('data');
    // Its summaries follow the decision too: none redacted, the first six and last four masked.
    expect(redacted).not.toHaveProperty('card');
    expect((created.body as { card: unknown }).card).toMatchObject({ bin: '42424242', last4: '4242' });
    for (const key of ['masker', 'pciLowReader']) {
      const masked = await got(key, cardId);
      expect(masked.data).not.toEqual(card);
      expect(JSON.stringify(masked)).not.toContain(card.number);
      expect(masked.card).toMatchObject({ bin: '424242', last4: '4242' });
    }
    await api.get(`/tokens/${general.id}`).set('svc-api-key', 'pciLowReader').expect(403);
    for (const path of ['/tokens?size=100', '/v2/tokens?size=100']) {
      for (const key of ['masker', 'redactor', 'pciLowReader']) {
        const listed = await api.get(path).set('svc-api-key', key).expect(200);
        expect(JSON.stringify(listed.body)).not.toContain(card.number);
      }
      const revealed = await api.get(path).set('svc-api-key', 'masker').expect(200);
      const tokens = (revealed.body as { data: { id: string; data?: unknown }[] }).data;
      expect(tokens.find((token) => token.id === general.id)?.data).toEqual(secret);
      const low = await api.get(path).set('svc-api-key', 'pciLowReader').expect(200);
      const lowIds = (low.body as { data: { id: string }[] }).data.map((token) => token.id);
      expect(lowIds).toContain(cardId);
      expect(lowIds).not.toContain(general.id);
    }
    // Every read is on record, with what it showed when that was not the data.
    const recorded = (await readsOf(cardId))
      .flatMap((recorded) => recorded.tokens)
      .filter((read) => read.token_id === cardId)
      .map((read) => read.transform ?? 'reveal');
    expect(recorded.length).toBeGreaterThanOrEqual(5);
    expect(new Set(recorded)).toEqual(new Set(['mask', 'redact']));
  });

  it('masks: the type’s default or the one given, answered as the expression; a masked read shows it evaluated', async () => {
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };
    const created = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ type: 'card', data: card })
      .expect(201);
    const cardToken = created.body as { id: string; mask: unknown };
    expect(cardToken.mask).toMatchObject({ number: '{{ data.number | reveal_last: 4 }}' });
    const masked = await api.get(`/tokens/${cardToken.id}`).set('svc-api-key', 'masker').expect(200);
    expect((masked.body as { data: unknown }).data).toEqual({
      number: 'XXXXXXXXXXXX4242',
      expiration_month: 12,
      expiration_year: 2030,
    });
    // A mask shows at most a field's last four characters (docs/token-types.md, Masks).
    await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ data: 'sk_live_abcdef', containers: ['/pci/'], mask: '{{ data | reveal_first: 3 }}…' })
      .expect(400);
    const own = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ data: 'sk_live_abcdef', containers: ['/pci/'], mask: 'key …{{ data | reveal_last: 2 }}' })
      .expect(201);
    const ownToken = own.body as { id: string; mask: unknown };
    expect(ownToken.mask).toBe('key …{{ data | reveal_last: 2 }}');
    const read = await api.get(`/tokens/${ownToken.id}`).set('svc-api-key', 'masker').expect(200);
    expect((read.body as { data: unknown }).data).toBe('key …XXXXXXXXXXXXef');
    // A `token` has no default mask: masked, it shows no data.
    const plain = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ data: 'x', containers: ['/pci/'] });
    const plainRead = await api
      .get(`/tokens/${(plain.body as { id: string }).id}`)
      .set('svc-api-key', 'masker')
      .expect(200);
    expect(plainRead.body).not.toHaveProperty('data');
    // An update changes the mask; the next masked read shows the new one.
    await api
      .patch(`/tokens/${ownToken.id}`)
      .set('svc-api-key', 'admin')
      .send({ mask: '{{ data | last4 }}' })
      .expect(200);
    const after = await api.get(`/tokens/${ownToken.id}`).set('svc-api-key', 'masker').expect(200);
    expect((after.body as { data: unknown; mask: unknown }).data).toBe('cdef');
  });

  it('a mask naming a field the data lacks, or revealing the whole data, is a 400 naming body.mask; nothing appended', async () => {
    const head = await side.store.headPosition();
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };
    const missing = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ type: 'card', data: card, mask: { number: '{{ data.pan | last4 }}' } })
      .expect(400);
    expect((missing.body as { errors: object }).errors).toEqual({
      'body.mask.number': ['The mask names a field the data does not have'],
    });
    const whole = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ data: secret, mask: '{{ data }}' })
      .expect(400);
    expect(Object.keys((whole.body as { errors: object }).errors)).toEqual(['body.mask']);
    expect(JSON.stringify([missing.body, whole.body])).not.toContain('4242424242424242');
    expect(JSON.stringify(whole.body)).not.toContain(secret);
    expect(await side.store.headPosition()).toEqual(head);
    const { id } = await create();
    await api
      .patch(`/tokens/${id}`)
      .set('svc-api-key', 'admin')
      .send({ mask: `${secret}` })
      .expect(400);
  });

  it('without an API key every route is a 401 problem', async () => {
    const { id } = await create();
    for (const call of [
      api.post('/tokens').send({ data: secret }),
      api.get('/tokens'),
      api.get('/v2/tokens'),
      api.get(`/tokens/${id}`),
      api.patch(`/tokens/${id}`).send({ metadata: { order: 'o-2' } }),
      api.delete(`/tokens/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401 });
    }
  });

  it('a key without the permission, on the tenant or on the containers named, is a 403, and nothing is appended', async () => {
    const { id } = await create();
    const head = await side.store.headPosition();
    const refused = await api.post('/tokens').set('svc-api-key', 'reader').send({ data: secret }).expect(403);
    expect(refused.body).toMatchObject({ status: 403, detail: expect.stringContaining('token:create') });
    await api
      .post('/tokens')
      .set('svc-api-key', 'pciWriter')
      .send({ data: secret, containers: ['/general/'] })
      .expect(403);
    await api.patch(`/tokens/${id}`).set('svc-api-key', 'reader').send({ metadata: {} }).expect(403);
    await api.delete(`/tokens/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await side.store.headPosition()).toEqual(head);
    await api
      .post('/tokens')
      .set('svc-api-key', 'pciWriter')
      .send({ data: secret, containers: ['/pci/'] })
      .expect(201);
  });

  it('another tenant’s token is a 404 on every route that names it: nothing is read or changed', async () => {
    const { id } = await create();
    const head = await side.store.headPosition();
    const asOther = 'otherTenant';
    await api.get(`/tokens/${id}`).set('svc-api-key', asOther).expect(404);
    await api.patch(`/tokens/${id}`).set('svc-api-key', asOther).send({ metadata: {} }).expect(404);
    await api.delete(`/tokens/${id}`).set('svc-api-key', asOther).expect(404);
    const listed = await api.get('/tokens').set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [] });
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('PATCH merges the metadata and DELETE removes the token: each answered after the read model has it', async () => {
    const { id } = await create();
    const patched = await api
      .patch(`/tokens/${id}`)
      .set('svc-api-key', 'admin')
      .set('content-type', 'application/merge-patch+json')
      .send(JSON.stringify({ metadata: { order: 'o-2' } }))
      .expect(200);
    expect(patched.body).toMatchObject({ id, metadata: { order: 'o-2' } });
    const read = await api.get(`/tokens/${id}`).set('svc-api-key', 'admin').expect(200);
    expect(read.body).toMatchObject({ metadata: { order: 'o-2' }, data: secret });
    await api.delete(`/tokens/${id}`).set('svc-api-key', 'admin').expect(204);
    await api.get(`/tokens/${id}`).set('svc-api-key', 'admin').expect(404);
    expect((await storedEvents(side.store, tokenStream(tenant, id))).map((event) => event.type)).toEqual([
      'TokenCreated',
      'TokenUpdated',
      'TokenDeleted',
    ]);
  });
});
