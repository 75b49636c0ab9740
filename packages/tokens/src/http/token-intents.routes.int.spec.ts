import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import { TokenIntentCommands } from '../commands/token-intents.commands.ts';
import { tokenIntentStream, tokenStream } from '../domain/tokens.events.ts';
import { tokenIntentsProjection } from '../projections/token-intents.projection.ts';
import { tokensProjection } from '../projections/tokens.projection.ts';
import { tokenAccess } from './token-access.ts';
import { tokenIntentRoutes } from './token-intents.routes.ts';
import { tokenResourceRoutes } from './tokens.routes.ts';
import { tokenRouteApp } from '../testing/token-route-app.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const everything = [
  'token:create',
  'token:read',
  'token-intent:create',
  'token-intent:read',
  'token-intent:delete',
];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, everything),
  /** A public application's key: creates tokens and intents, reads nothing. */
  publicKey: testPrincipal(tenant, randomUUID(), ['token:create', 'token-intent:create'], {
    actorType: 'application',
  }),
  reader: testPrincipal(tenant, randomUUID(), ['token:read']),
  otherTenant: testPrincipal(otherTenant, randomUUID(), everything),
};

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2040, cvc: '123' };

describe('token intent routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const { side, api } = tokenRouteApp({
    tenants: [tenant, otherTenant],
    callers,
    projections: [tokensProjection, tokenIntentsProjection],
    routes: (deps) => [
      ...tokenResourceRoutes(deps, tokenAccess(deps)),
      ...tokenIntentRoutes({
        consistency: deps.consistency,
        commands: new TokenIntentCommands({
          store: deps.store,
          vault: deps.vault,
          clock: deps.clock,
          cardCvcTtlSeconds: deps.tokenCommands.cardCvcTtlSeconds,
        }),
      }),
    ],
  });

  const createIntent = async (key = 'publicKey') =>
    (await api.post('/token-intents').set('svc-api-key', key).send({ type: 'card', data: card }).expect(201))
      .body as { id: string; expires_at: string; created_at: string; fingerprint?: string; card?: object };

  it('POST appends TokenIntentCreated (data sealed) and answers its summary, never the data; GET six + four, no fingerprint', async () => {
    const intent = await createIntent();
    expect(intent).toMatchObject({
      tenant_id: tenant,
      type: 'card',
      card: { bin: '42424242', last4: '4242', expiration_month: 12, expiration_year: 2040 },
    });
    // A card with its CVC is held as long as the CVC may be (CARD_CVC_TTL_SECONDS, an hour by
    // default); without one, 24 hours.
    expect(Date.parse(intent.expires_at) - Date.parse(intent.created_at)).toBe(3600_000);
    const { cvc: _cvc, ...withoutCvc } = card;
    const plain = (
      await api
        .post('/token-intents')
        .set('svc-api-key', 'publicKey')
        .send({ type: 'card', data: withoutCvc })
        .expect(201)
    ).body as { expires_at: string; created_at: string };
    expect(Date.parse(plain.expires_at) - Date.parse(plain.created_at)).toBe(24 * 3600_000);
    expect(intent).not.toHaveProperty('data');
    const events = await storedEvents(side.store, tokenIntentStream(tenant, intent.id));
    expect(events.map((event) => event.type)).toEqual(['TokenIntentCreated']);
    expect(JSON.stringify(events[0]!.data)).not.toContain(card.number);
    // A read (by any key: none reads an intent's data) shows what a masked read of a token shows:
    // the first six and the last four, no fingerprint (they would answer a guess of the card).
    const read = await api.get(`/token-intents/${intent.id}`).set('svc-api-key', 'admin').expect(200);
    const { fingerprint: _fingerprint, ...withoutFingerprint } = intent;
    expect(intent.fingerprint).toBeTruthy();
    expect(read.body).toEqual({ ...withoutFingerprint, card: { ...intent.card, bin: '424242' } });
  });

  it('POST /tokens { token_intent_id } makes the token once: the data is the intent’s, a second conversion is a 409', async () => {
    const intent = await createIntent();
    const made = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ token_intent_id: intent.id, metadata: { order: 'o-1' } })
      .expect(201);
    const token = made.body as { id: string; type: string };
    expect(token).toMatchObject({ type: 'card', metadata: { order: 'o-1' }, card: { last4: '4242' } });
    const read = await api.get(`/tokens/${token.id}`).set('svc-api-key', 'reader').expect(200);
    expect((read.body as { data: unknown }).data).toEqual(card);
    expect((await storedEvents(side.store, tokenIntentStream(tenant, intent.id))).map((e) => e.type)).toEqual(
      ['TokenIntentCreated', 'TokenIntentConverted'],
    );
    const tokenEvents = await storedEvents(side.store, tokenStream(tenant, token.id));
    expect(tokenEvents.map((e) => e.type)).toEqual(['TokenCreated']);
    // Its CVC goes when the intent's would have: counted from the intent's creation.
    const intentEvents = await storedEvents(side.store, tokenIntentStream(tenant, intent.id));
    const intentCvcTime = (intentEvents[0]!.data as { cvc_expires_at?: string }).cvc_expires_at;
    expect(intentCvcTime).toBe(intent.expires_at);
    expect((tokenEvents[0]!.data as { cvc_expires_at?: string }).cvc_expires_at).toBe(intentCvcTime);
    const head = await side.store.headPosition();
    await api.post('/tokens').set('svc-api-key', 'admin').send({ token_intent_id: intent.id }).expect(409);
    expect(await side.store.headPosition()).toEqual(head);
    await api.get(`/token-intents/${intent.id}`).set('svc-api-key', 'admin').expect(404);
  });

  it('two conversions at once make one token: the other is a 409', async () => {
    const intent = await createIntent();
    const answers = await Promise.all(
      [1, 2].map(() => api.post('/tokens').set('svc-api-key', 'admin').send({ token_intent_id: intent.id })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    const events = await storedEvents(side.store, tokenIntentStream(tenant, intent.id));
    expect(events.filter((event) => event.type === 'TokenIntentConverted')).toHaveLength(1);
  });

  it('DELETE appends TokenIntentDeleted; then GET, DELETE and a conversion are 404s', async () => {
    const intent = await createIntent();
    await api.delete(`/token-intents/${intent.id}`).set('svc-api-key', 'admin').expect(204);
    await api.get(`/token-intents/${intent.id}`).set('svc-api-key', 'admin').expect(404);
    await api.delete(`/token-intents/${intent.id}`).set('svc-api-key', 'admin').expect(404);
    await api.post('/tokens').set('svc-api-key', 'admin').send({ token_intent_id: intent.id }).expect(404);
  });

  it('a bad body is a 400 naming the field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const refused = await api
      .post('/token-intents')
      .set('svc-api-key', 'publicKey')
      .send({ type: 'card', data: { ...card, number: '4242424242424241' }, encrypted: 'x' })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    const fields = Object.keys((refused.body as { errors: object }).errors);
    expect(fields).toEqual(expect.arrayContaining(['body.data.number', 'body.encrypted']));
    expect(JSON.stringify(refused.body)).not.toContain('4242424242424241');
    const both = await api
      .post('/tokens')
      .set('svc-api-key', 'admin')
      .send({ token_intent_id: randomUUID(), data: 'x' })
      .expect(400);
    expect(Object.keys((both.body as { errors: object }).errors)).toEqual(['body.data']);
    await api.get('/token-intents/not-a-uuid').set('svc-api-key', 'admin').expect(400);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('without an API key a 401; without the permission a 403 (a public key reads no intent)', async () => {
    const intent = await createIntent();
    for (const call of [
      api.post('/token-intents').send({ type: 'card', data: card }),
      api.get(`/token-intents/${intent.id}`),
      api.delete(`/token-intents/${intent.id}`),
    ]) {
      await call.expect(401).expect('content-type', /^application\/problem\+json/);
    }
    await api.get(`/token-intents/${intent.id}`).set('svc-api-key', 'publicKey').expect(403);
    await api.delete(`/token-intents/${intent.id}`).set('svc-api-key', 'publicKey').expect(403);
    await api
      .post('/token-intents')
      .set('svc-api-key', 'reader')
      .send({ type: 'card', data: card })
      .expect(403);
  });

  it('another tenant’s intent is a 404 to get, delete or convert, and stays held', async () => {
    const intent = await createIntent();
    await api.get(`/token-intents/${intent.id}`).set('svc-api-key', 'otherTenant').expect(404);
    await api.delete(`/token-intents/${intent.id}`).set('svc-api-key', 'otherTenant').expect(404);
    await api
      .post('/tokens')
      .set('svc-api-key', 'otherTenant')
      .send({ token_intent_id: intent.id })
      .expect(404);
    await api.get(`/token-intents/${intent.id}`).set('svc-api-key', 'admin').expect(200);
  });
});
