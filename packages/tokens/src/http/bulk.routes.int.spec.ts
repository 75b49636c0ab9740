import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DataOf } from '@tokenvault/cqrs';
import { storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import { Detokenizer } from '../commands/detokenize.ts';
import { tokenReadsStream, tokenStream, type TokensContextEvent } from '../domain/tokens.events.ts';
import { bulkTokenRoutes } from './bulk.routes.ts';
import { tokenRouteApp } from '../testing/token-route-app.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const all = ['token:create', 'token:read', 'token:use'];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, all),
  /** A public key: it may create tokens, never read or use them. */
  creator: testPrincipal(tenant, randomUUID(), ['token:create']),
  /** May create tokens under /pci/ only. */
  pciWriter: testPrincipal(tenant, randomUUID(), [], {
    rules: [{ container: '/pci/', permissions: ['token:create'] }],
  }),
  otherTenant: testPrincipal(otherTenant, randomUUID(), all),
  /** Uses cards masked, everything else as it is. */
  masker: testPrincipal(tenant, randomUUID(), [], {
    rules: [
      { container: '/', priority: 2, transform: 'reveal', permissions: ['token:use'] },
      { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:use'] },
    ],
  }),
};

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

describe('bulk token routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const { side, api } = tokenRouteApp({
    tenants: [tenant, otherTenant],
    callers,
    routes: ({ store, vault, consistency, tokenQueries, readAuditor, tokenCommands }) =>
      bulkTokenRoutes({
        consistency,
        commands: tokenCommands,
        detokenizer: new Detokenizer({ store, vault, tokenQueries, readAuditor }),
      }),
  });

  const readsNaming = async (ids: readonly string[]) => {
    const shards = await Promise.all(
      [0, 1, 2, 3].map((shard) => storedEvents(side.store, tokenReadsStream(shard))),
    );
    return shards
      .flat()
      .flatMap((event) => (event.data as DataOf<TokensContextEvent, 'TokensReadBatch'>).reads)
      .filter((recorded) => recorded.tokens.some((read) => ids.includes(read.token_id)));
  };

  it('POST /tokenize answers the body in its shape, each token request replaced by its token, all in one commit', async () => {
    const body = {
      customer: 'c-42',
      first_name: { type: 'token', data: 'Ada' },
      cards: [
        { type: 'card', data: card },
        'not a request',
        { type: 'token', data: 'tag', metadata: { n: '1' } },
      ],
    };
    const response = await api.post('/tokenize').set('svc-api-key', 'creator').send(body).expect(200);
    const answered = response.body as {
      customer: string;
      first_name: { id: string; type: string };
      cards: [{ id: string; card: object }, string, { id: string; metadata: object }];
    };
    expect(answered.customer).toBe('c-42');
    expect(answered.cards[1]).toBe('not a request');
    expect(answered.first_name).toMatchObject({ tenant_id: tenant, type: 'token' });
    expect(answered.cards[0]).toMatchObject({ type: 'card', card: { last4: '4242' } });
    expect(answered.cards[2]).toMatchObject({ metadata: { n: '1' } });
    expect(JSON.stringify(answered)).not.toContain('Ada');
    expect(JSON.stringify(answered)).not.toContain(card.number);
    const ids = [answered.first_name.id, answered.cards[0].id, answered.cards[2].id];
    const commits = new Set<string>();
    for (const id of ids) {
      const events = await storedEvents(side.store, tokenStream(tenant, id));
      expect(events.map((event) => event.type)).toEqual(['TokenCreated']);
      const [recorded] = await side.store.readStream(tokenStream(tenant, id));
      commits.add(recorded!.position.commit);
    }
    expect(commits.size).toBe(1);
  });

  it('POST /detokenize renders every expression under the caller’s rules (a card masked), one read naming every token', async () => {
    const tokenized = await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send([
        { type: 'card', data: card },
        { type: 'token', data: 'Ada Lovelace' },
      ])
      .expect(200);
    const [cardToken, nameToken] = tokenized.body as [{ id: string }, { id: string }];
    const body = {
      name: `{{ ${nameToken.id} }}`,
      greeting: `Dear {{ ${nameToken.id} }}`,
      number: `{{ ${cardToken.id} | json: '$.number' }}`,
      kept: 42,
    };
    const revealed = await api.post('/detokenize').set('svc-api-key', 'admin').send(body).expect(200);
    expect(revealed.body).toEqual({
      name: 'Ada Lovelace',
      greeting: 'Dear Ada Lovelace',
      number: card.number,
      kept: 42,
    });
    const masked = await api.post('/detokenize').set('svc-api-key', 'masker').send(body).expect(200);
    expect((masked.body as { name: string }).name).toBe('Ada Lovelace');
    expect(JSON.stringify(masked.body)).not.toContain(card.number);
    const reads = await readsNaming([cardToken.id, nameToken.id]);
    expect(reads).toHaveLength(2);
    for (const read of reads) {
      const named = read.tokens.map((one) => one.token_id);
      expect(named.sort()).toEqual([cardToken.id, nameToken.id].sort());
    }
  });

  it('a bad token request is a 400 naming its place in the body, and nothing of the call is stored', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send({ good: { type: 'token', data: 'fine' }, list: [{ type: 'card', data: { number: '4242' } }] })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(Object.keys((response.body as { errors: object }).errors)).toContain('body.list.0.data.number');
    expect(await side.store.headPosition()).toEqual(head);
    const tooMany = Array.from({ length: 101 }, (_, index) => ({ type: 'token', data: `v${index}` }));
    const refused = await api.post('/tokenize').set('svc-api-key', 'admin').send(tooMany).expect(400);
    expect((refused.body as { errors: object }).errors).toHaveProperty('body');
    await api.post('/tokenize').set('svc-api-key', 'admin').send({ nothing: 'here' }).expect(400);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('one request for a container the key lacks is a 403 naming it, and none of the others is created', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/tokenize')
      .set('svc-api-key', 'pciWriter')
      .send({
        ok: { type: 'card', data: card },
        not_ok: { type: 'token', data: 'x', containers: ['/general/'] },
      })
      .expect(403);
    expect((response.body as { detail: string }).detail).toContain('body.not_ok');
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('an id taken already refuses the whole call with a 409; two requests for one id are a 400', async () => {
    const id = `bulk-${randomUUID()}`;
    await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send([{ id, type: 'token', data: 'a' }])
      .expect(200);
    const head = await side.store.headPosition();
    await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send([
        { type: 'token', data: 'new one' },
        { id, type: 'token', data: 'b' },
      ])
      .expect(409);
    expect(await side.store.headPosition()).toEqual(head);
    const twice = await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send({
        a: { id: `x-${id}`, type: 'token', data: 'a' },
        b: { id: `x-${id}`, type: 'token', data: 'b' },
      })
      .expect(400);
    expect((twice.body as { errors: object }).errors).toHaveProperty(['body.b.id']);
  });

  it('deduplicated requests of equal data in one call answer one token', async () => {
    const data = `dup-${randomUUID()}`;
    const response = await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send([
        { type: 'token', data, deduplicate_token: true },
        { type: 'token', data, deduplicate_token: true },
      ])
      .expect(200);
    const [first, second] = response.body as [{ id: string }, { id: string }];
    expect(second.id).toBe(first.id);
  });

  it('without a key a 401; a key without the permission (a public key detokenizing) a 403; another tenant’s tokens name no token', async () => {
    const tokenized = await api
      .post('/tokenize')
      .set('svc-api-key', 'admin')
      .send([{ type: 'token', data: 's' }]);
    const [token] = tokenized.body as [{ id: string }];
    await api
      .post('/tokenize')
      .send([{ type: 'token', data: 's' }])
      .expect(401);
    await api
      .post('/detokenize')
      .send({ a: `{{ ${token.id} }}` })
      .expect(401);
    await api
      .post('/detokenize')
      .set('svc-api-key', 'creator')
      .send({ a: `{{ ${token.id} }}` })
      .expect(403);
    const foreign = await api
      .post('/detokenize')
      .set('svc-api-key', 'otherTenant')
      .send({ a: `{{ ${token.id} }}` })
      .expect(400);
    expect(JSON.stringify(foreign.body)).not.toContain('"s"');
    expect((foreign.body as { errors: object }).errors).toHaveProperty('body');
  });
});
