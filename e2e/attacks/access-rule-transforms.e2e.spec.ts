// An application whose rule on /pci/ masks (a support tool that should see `XXXX…4242`) holds a
// key; the attacker holds it and wants the card number. It tries every path data leaves by: GET,
// the lists, a child list, both searches (under a search rule that reveals), a bulk detokenization,
// a reactor's arguments, a reactor bound to its application (`svc`), a
// proxy expression, a reactor answer kept under an Idempotency-Key from when its rule still
// revealed, and granting itself (or a new application) a revealing rule. None may give the
// number back; the summary's last four is all it learns.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { createReactor, echoArgs } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  card?: { last4?: string };
}

describe('attack: a key whose rule masks cards reads the number through another path', () => {
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let destination: TestDestination;
  const number = uniqueCardNumber();
  const last4 = number.slice(-4);
  const maskedNumber = `${'X'.repeat(number.length - 4)}${last4}`;
  const marker = `transform-attack-${randomBytes(4).toString('hex')}`;
  let cardId: string;
  let parentId: string;
  let applicationId: string;
  let maskingKey: string;
  let echoReactor: string;
  let svcReactor: string;
  const idempotencyKey = `support-${randomBytes(8).toString('hex')}`;
  const masking = [
    { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read', 'token:use'] },
    // Its search rule is the revealing one: a search that shaped results by the token:search
    // rule instead of the token:read one would answer the number.
    {
      container: '/',
      priority: 2,
      transform: 'reveal',
      permissions: ['token:read', 'token:use', 'token:search'],
    },
  ];
  const numberArgs = () => ({ number: `{{ ${cardId} | json: '$.number' }}` });

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    const admin = env.tenant.client;
    const created = await admin.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 9, expiration_year: 2031 },
        metadata: { marker },
      },
    });
    expect(created.status).toBe(201);
    cardId = created.body.id;
    parentId = (await admin.tokens.create({ data: 'parent', metadata: { marker: `${marker}-parent` } })).id;
    expect((await admin.request('POST', `/tokens/${parentId}/children/${cardId}`)).status).toBeLessThan(300);
    echoReactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'number', type: 'string', optional: true }],
    });

    // The support application first reveals everything: a reactor answer under an
    // Idempotency-Key holds the number. Then its rules mask /pci/.
    const application = await admin.request<{ id: string; key: string }>('POST', '/applications', {
      body: {
        name: 'support',
        type: 'private',
        permissions: ['application:create', 'application:update'],
        rules: [{ container: '/', permissions: ['token:read', 'token:use'] }],
      },
    });
    expect(application.status).toBe(201);
    applicationId = application.body.id;
    maskingKey = application.body.key;
    const first = await admin.request<{ raw?: { number?: string } }>(
      'POST',
      `/reactors/${echoReactor}/react`,
      {
        body: { args: numberArgs() },
        headers: { 'idempotency-key': idempotencyKey },
        apiKey: maskingKey,
      },
    );
    expect(first.body.raw?.number).toBe(number);
    const updated = await admin.request('PUT', `/applications/${applicationId}`, {
      body: { name: 'support', permissions: ['application:create', 'application:update'], rules: masking },
    });
    expect(updated.status).toBe(200);

    svcReactor = await createReactor(
      env.tenant,
      {
        code: `module.exports = async function (req) {
          const token = await req.svc.tokens.retrieve(req.args.id);
          const children = await req.svc.tokens.listChildren(req.args.parent);
          return { raw: { token, children } };
        };`,
        request_parameters: [
          { name: 'id', type: 'string' },
          { name: 'parent', type: 'string' },
        ],
      },
      { applicationId },
    );
  });
  afterAll(async () => destination?.close());

  const revealsNothing = (body: unknown) => expect(JSON.stringify(body)).not.toContain(number);

  it('GET, the lists and the child list answer the masked number and the last four, never the number', async () => {
    const client = env.tenant.client;
    const read = await client.request<Token>('GET', `/tokens/${cardId}`, { apiKey: maskingKey });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ number: maskedNumber, expiration_month: 9, expiration_year: 2031 });
    expect(read.body.card?.last4).toBe(last4);
    revealsNothing(read.body);
    for (const [path, query] of [
      ['/tokens', { 'metadata.marker': marker }],
      ['/v2/tokens', { metadata: JSON.stringify({ marker }) }],
      [`/tokens/${parentId}/children`, {}],
    ] as const) {
      const listed = await client.request<{ data: Token[] }>('GET', path, { query, apiKey: maskingKey });
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((token) => token.id)).toEqual([cardId]);
      expect(listed.body.data[0]!.data).toMatchObject({ number: maskedNumber });
      revealsNothing(listed.body);
    }
  });

  it('both searches answer the masked number, never the number, though the key’s search rule reveals', async () => {
    for (const path of ['/v2/tokens/search', '/tokens/search']) {
      for (const query of [`metadata.marker:${marker}`, `type:card AND metadata.marker:${marker}`]) {
        const found = await env.tenant.client.request<{ data: Token[] }>('POST', path, {
          body: { query },
          apiKey: maskingKey,
        });
        expect(found.status, JSON.stringify(found.body)).toBe(200);
        expect(found.body.data.map((token) => token.id)).toEqual([cardId]);
        expect(found.body.data[0]!.data).toEqual({
          number: maskedNumber,
          expiration_month: 9,
          expiration_year: 2031,
        });
        expect(found.body.data[0]!.card?.last4).toBe(last4);
        revealsNothing(found.body);
      }
    }
  });

  it('a reactor’s arguments and a reactor bound to the application (svc) see the mask', async () => {
    const client = env.tenant.client;
    const echoed = await client.request<{ raw?: { number?: string } }>(
      'POST',
      `/reactors/${echoReactor}/react`,
      {
        body: { args: numberArgs() },
        apiKey: maskingKey,
      },
    );
    expect(echoed.status).toBe(200);
    expect(echoed.body.raw?.number).toBe(maskedNumber);
    // Invoked by the tenant's administrator: the reactor still reads as its own application.
    const viaSvc = await client.request<{ raw?: { token?: Token; children?: { data: Token[] } } }>(
      'POST',
      `/reactors/${svcReactor}/react`,
      { body: { args: { id: cardId, parent: parentId } } },
    );
    expect(viaSvc.status).toBe(200);
    expect(viaSvc.body.raw?.token?.data).toMatchObject({ number: maskedNumber });
    expect(viaSvc.body.raw?.children?.data[0]?.data).toMatchObject({ number: maskedNumber });
    revealsNothing(viaSvc.body);
  });

  it('POST /detokenize (a bulk detokenization) answers the mask', async () => {
    const detokenized = await env.tenant.client.request<{ number?: string; whole?: { number?: string } }>(
      'POST',
      '/detokenize',
      { body: { ...numberArgs(), whole: `{{ ${cardId} }}` }, apiKey: maskingKey },
    );
    expect(detokenized.status).toBe(200);
    expect(detokenized.body.number).toBe(maskedNumber);
    expect(detokenized.body.whole?.number).toBe(maskedNumber);
    revealsNothing(detokenized.body);
  });

  it('a proxy expression sends the mask to the destination', async () => {
    destination.received.length = 0;
    const response = await fetch(`${env.stack.url}/proxy/charges`, {
      method: 'POST',
      headers: {
        'svc-api-key': maskingKey,
        'svc-proxy-url': destination.url,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ number: `{{ ${cardId} | json: '$.number' }}`, whole: `{{ ${cardId} }}` }),
    });
    expect(response.status).toBeLessThan(500);
    const sent = destination.received.map((request) => request.body.toString('utf8'));
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!)).toMatchObject({ number: maskedNumber, whole: { number: maskedNumber } });
    expect(sent[0]).not.toContain(number);
  });

  it('the answer kept under its Idempotency-Key from when the rule revealed does not give the number back', async () => {
    const replayed = await env.tenant.client.request<{ raw?: unknown }>(
      'POST',
      `/reactors/${echoReactor}/react`,
      {
        body: { args: numberArgs() },
        headers: { 'idempotency-key': idempotencyKey },
        apiKey: maskingKey,
      },
    );
    expect(replayed.status).toBe(409);
    revealsNothing(replayed.body);
  });

  it('the key grants no revealing rule: not to a new application, not to its own', async () => {
    const client = env.tenant.client;
    for (const rules of [
      [{ container: '/pci/high/', permissions: ['token:read'] }],
      [{ container: '/', transform: 'reveal', permissions: ['token:read'] }],
      [{ container: '/pci/', transform: 'reveal', permissions: ['token:use'] }],
    ]) {
      const refused = await client.request<{ errors?: Record<string, string[]> }>('POST', '/applications', {
        body: { name: 'escalated', type: 'private', permissions: [], rules },
        apiKey: maskingKey,
      });
      expect(refused.status).toBe(403);
      expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.rules.0.transform']);
    }
    const own = await client.request<{ errors?: Record<string, string[]> }>(
      'PUT',
      `/applications/${applicationId}`,
      {
        body: {
          name: 'support',
          permissions: ['application:create', 'application:update'],
          rules: [{ container: '/', permissions: ['token:read', 'token:use'] }],
        },
        apiKey: maskingKey,
      },
    );
    expect(own.status).toBe(403);
    expect(Object.keys(own.body.errors ?? {})).toEqual(['body.rules.0.transform']);
    const read = await client.request<Token>('GET', `/tokens/${cardId}`, { apiKey: maskingKey });
    revealsNothing(read.body);
  });
});
