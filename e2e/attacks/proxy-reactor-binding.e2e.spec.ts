// Binding code needs what the code holds. The tenant's owner made a reactor that looks a card up
// by its token id, as an application holding token:read (a reasonable thing to run behind an
// authenticated proxy). An attacker holds a low-privilege key of the same tenant: proxy:create
// or proxy:update, and reactor:read to learn the reactor's id. If it may bind that reactor to a
// proxy of its own without auth, pointed at a destination it controls, anyone with the proxy's
// key (the attacker, with no credentials at all) makes the reactor fetch any card it names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permission } from '@tokenvault/contracts';
import { uniqueCardNumber } from '../support/cards.ts';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { createReactor } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  status: number;
  errors?: Record<string, string[]>;
  id?: string;
  key?: string;
}

/** The owner's reactor: reads the card named by `card_token` in the message, as its application. */
const cardLookup = `module.exports = async function (req) {
  const token = await req.svc.tokens.retrieve(req.args.body.card_token);
  return { raw: { headers: { 'content-type': 'application/json' }, body: { card: token.data } } };
};`;

describe('attack: a low-privilege key binds a reactor that holds more than it does to a proxy', () => {
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  const cardNumber = uniqueCardNumber();
  let destination: TestDestination;
  let cardId: string;
  let reactorId: string;

  beforeAll(async () => {
    // The attacker's own page: it answers with the token id the response reactor should open.
    destination = await startHttpDestination('127.0.0.1');
    const owner = env.tenant.client;
    cardId = (
      await owner.tokens.create({
        type: 'card',
        data: { number: cardNumber, expiration_month: 4, expiration_year: 2031 },
      })
    ).id;
    const reader = await owner.applications.create({
      name: 'Card reader',
      type: 'private',
      permissions: ['token:read'],
    });
    reactorId = await createReactor(env.tenant, { code: cardLookup }, { applicationId: reader.id });
  });
  afterAll(async () => destination?.close());

  const keyWith = async (permissions: Permission[]) =>
    (await env.tenant.client.applications.create({ name: 'Low key', type: 'private', permissions })).key;

  const request = <T>(method: string, path: string, apiKey: string, body: unknown) =>
    env.tenant.client.request<T>(method, path, { apiKey, body });

  /** Calls the proxy as anyone may (its key only), naming the card; what leaked of the number. */
  const stealThrough = async (proxyKey: string) => {
    destination.received.length = 0;
    destination.answer((_received, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ card_token: cardId }));
    });
    const answer = await fetch(`${env.stack.url}/proxy/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-proxy-key': proxyKey },
      body: JSON.stringify({ card_token: cardId }),
    });
    const seen = [await answer.text(), ...destination.received.map((r) => r.body.toString('utf8'))];
    return seen.filter((text) => text.includes(cardNumber));
  };

  /** What the attacker's proxy settings bind: the owner's reactor, no auth, its own destination. */
  const hostileSettings = (field: 'request_reactor_id' | 'response_reactor_id') => ({
    name: 'Innocent proxy',
    destination_url: `${destination.url}/page`,
    require_auth: false,
    [field]: reactorId,
  });

  /**
   * Each attempt is carried through: if the binding is accepted, the proxy is called without
   * credentials, so a failure shows the whole theft, not only a status.
   */
  const expectRefused = async (
    attempt: { status: number; body: Answer },
    field: string,
    proxyKey: string | undefined,
  ) => {
    const leaked = proxyKey !== undefined && attempt.status < 300 ? await stealThrough(proxyKey) : [];
    expect(leaked, 'the card number reached the attacker').toEqual([]);
    expect(attempt.status, JSON.stringify(attempt.body)).toBe(403);
    expect(Object.keys(attempt.body.errors ?? {})).toEqual([field]);
  };

  /** A proxy the owner made (behind auth; `bound`: with the reactor as its request stage). */
  const ownersProxy = async (bound: Record<string, unknown> = {}) => {
    const proxy = await request<Answer>('POST', '/proxies', env.tenant.apiKey, {
      name: 'Owner’s proxy',
      destination_url: `${destination.url}/owner`,
      ...bound,
    });
    expect(proxy.status, JSON.stringify(proxy.body)).toBe(201);
    return proxy;
  };

  for (const field of ['request_reactor_id', 'response_reactor_id'] as const) {
    it(`POST /proxies: proxy:create alone cannot bind the reactor as ${field} (403: token:use)`, async () => {
      const attacker = await keyWith(['proxy:create', 'reactor:read']);
      // The reactor's id is no secret to a key that may read reactors.
      const listed = await request<{ data: { id: string }[] }>('GET', '/reactors', attacker, undefined);
      expect(listed.body.data.map((reactor) => reactor.id)).toContain(reactorId);
      const created = await request<Answer>('POST', '/proxies', attacker, hostileSettings(field));
      await expectRefused(created, `body.${field}`, created.body.key);
    });
  }

  it('POST /proxies: token:use without the reactor application’s token:read is refused too (403)', async () => {
    const attacker = await keyWith(['proxy:create', 'token:use']);
    const created = await request<Answer>(
      'POST',
      '/proxies',
      attacker,
      hostileSettings('request_reactor_id'),
    );
    await expectRefused(created, 'body.request_reactor_id', created.body.key);
  });

  it('PUT /proxies/{id}: proxy:update cannot bind the reactor to the owner’s proxy', async () => {
    const proxy = await ownersProxy();
    const attacker = await keyWith(['proxy:update']);
    const replaced = await request<Answer>(
      'PUT',
      `/proxies/${proxy.body.id}`,
      attacker,
      hostileSettings('response_reactor_id'),
    );
    await expectRefused(replaced, 'body.response_reactor_id', proxy.body.key);
  });

  it('PATCH /proxies/{id}: proxy:update cannot add the reactor to the owner’s proxy', async () => {
    const proxy = await ownersProxy();
    const attacker = await keyWith(['proxy:update']);
    const patched = await request<Answer>('PATCH', `/proxies/${proxy.body.id}`, attacker, {
      request_reactor_id: reactorId,
      require_auth: false,
    });
    await expectRefused(patched, 'body.request_reactor_id', proxy.body.key);
  });

  it('PATCH /proxies/{id}: a proxy the owner bound is re-decided whole, so a lower key cannot take it over', async () => {
    // The owner binds the reactor behind auth; the attacker only opens the proxy to anyone.
    const proxy = await ownersProxy({ request_reactor_id: reactorId });
    const attacker = await keyWith(['proxy:update']);
    const patched = await request<Answer>('PATCH', `/proxies/${proxy.body.id}`, attacker, {
      require_auth: false,
    });
    await expectRefused(patched, 'body.request_reactor_id', proxy.body.key);
  });

  it('a key holding token:use and what the reactor’s application holds binds it (the rule is not a ban)', async () => {
    const holder = await keyWith(['proxy:create', 'token:use', 'token:read']);
    const created = await request<Answer>('POST', '/proxies', holder, hostileSettings('request_reactor_id'));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  it('PUT /reactor-formulas/{id}: new code for the owner’s reactor needs what its application holds (403)', async () => {
    const reactor = await request<{ formula: { id: string; name: string; type: string } }>(
      'GET',
      `/reactors/${reactorId}`,
      env.tenant.apiKey,
      undefined,
    );
    const attacker = await keyWith(['reactor:update', 'reactor:read', 'token:use']);
    const replaced = await request<Answer>('PUT', `/reactor-formulas/${reactor.body.formula.id}`, attacker, {
      name: reactor.body.formula.name,
      type: reactor.body.formula.type,
      code: cardLookup.replace('card: token.data', 'card: token.data, stolen: true'),
      configuration: [],
      request_parameters: [],
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(403);
    expect(JSON.stringify(replaced.body.errors)).toContain(reactorId);
  });
});
