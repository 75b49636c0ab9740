import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from './support/cards.ts';
import { everyRedisValue } from './support/redis.ts';
import { useStack } from './support/stack.ts';
import {
  makeCertificate,
  startHttpDestination,
  startHttpsDestination,
  echoAnswer,
  type TestDestination,
} from './support/destinations.ts';

const card = { number: '4242424242424242', expiration_month: 4, expiration_year: 2029, cvc: '123' };

describe('the ephemeral proxy: /proxy/** with SVC-PROXY-URL', () => {
  const certificate = makeCertificate();
  const env = useStack({
    LOG_LEVEL: 'debug',
    // Loopback only: 127.0.0.1 is the operator's allow-listed internal address; 127.0.0.2 is not.
    PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
    PROXY_CA_FILE: certificate.certFile,
    PROXY_TIMEOUT_MS: '1500',
  });
  let destination: TestDestination;
  let secure: TestDestination;
  let forbiddenListener: TestDestination;
  let cardId: string;

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    secure = await startHttpsDestination(certificate);
    forbiddenListener = await startHttpDestination('127.0.0.2');
    cardId = (await env.tenant.client.tokens.create({ type: 'card', data: card })).id;
  });
  afterAll(async () => {
    await Promise.all([destination?.close(), secure?.close(), forbiddenListener?.close()]);
    certificate.cleanup();
  });

  const proxy = (
    path: string,
    init: {
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      to?: string;
      apiKey?: string;
    },
  ) =>
    fetch(`${env.stack.url}/proxy${path}`, {
      method: init.method ?? 'POST',
      headers: {
        'svc-api-key': init.apiKey ?? env.tenant.apiKey,
        'svc-proxy-url': init.to ?? `${destination.url}/v1`,
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: init.body }),
      redirect: 'manual',
    });

  it('forwards method, path, query, headers and a JSON body with its expressions rendered', async () => {
    destination.received.length = 0;
    const response = await proxy('/charges?expand=card&n=2', {
      headers: {
        'content-type': 'application/json',
        'x-card-last4': `{{ ${cardId} | json: '$.number' | last4 }}`,
        'x-plain': 'kept',
      },
      body: JSON.stringify({
        amount: 1000,
        card: `{{ ${cardId} }}`,
        number: `{{ ${cardId} | json: '$.number' }}`,
        exp: `{{ ${cardId} | card_exp: 'MM/YY' }}`,
        note: `card ending {{ ${cardId} | json: '$.number' | last4 }}`,
      }),
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-destination')).toBe('echo');
    const [received] = destination.received;
    expect(received).toBeDefined();
    expect(received!.method).toBe('POST');
    expect(received!.url).toBe('/v1/charges?expand=card&n=2');
    expect(received!.headers['x-card-last4']).toBe('4242');
    expect(received!.headers['x-plain']).toBe('kept');
    expect(received!.headers['svc-api-key']).toBeUndefined();
    expect(received!.headers['svc-proxy-url']).toBeUndefined();
    expect(received!.headers.host).toBe(new URL(destination.url).host);
    expect(JSON.parse(received!.body.toString('utf8'))).toEqual({
      amount: 1000,
      card,
      number: card.number,
      exp: '04/29',
      note: 'card ending 4242',
    });
    // The destination's answer comes back as it came.
    const answered = (await response.json()) as { method: string; url: string };
    expect(answered).toMatchObject({ method: 'POST', url: '/v1/charges?expand=card&n=2' });
  });

  it('renders form-encoded bodies value by value, as payment APIs expect', async () => {
    destination.received.length = 0;
    const response = await proxy('/tokens', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        'card[number]': `{{ ${cardId} | json: '$.number' }}`,
        'card[exp_month]': `{{ ${cardId} | json: '$.expiration_month' }}`,
        'card[cvc]': `{{ ${cardId} | json: '$.cvc' }}`,
        currency: 'eur',
      }).toString(),
    });
    expect(response.status).toBe(201);
    const sent = new URLSearchParams(destination.received[0]!.body.toString('utf8'));
    expect(Object.fromEntries(sent)).toEqual({
      'card[number]': card.number,
      'card[exp_month]': '4',
      'card[cvc]': '123',
      currency: 'eur',
    });
  });

  it('detokenizes text bodies and passes other types as bytes', async () => {
    destination.received.length = 0;
    await proxy('/xml', {
      headers: { 'content-type': 'application/xml' },
      body: `<card><number>{{ ${cardId} | json: '$.number' }}</number></card>`,
    });
    expect(destination.received[0]!.body.toString('utf8')).toBe(
      `<card><number>${card.number}</number></card>`,
    );
    const bytes = Buffer.from([0, 1, 2, 0x7b, 0x7b, 255]);
    await proxy('/file', { headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    expect(destination.received[1]!.body.equals(bytes)).toBe(true);
  });

  it('reaches an https destination (TLS to the host name, connection to the checked address)', async () => {
    secure.received.length = 0;
    const response = await proxy('/pay', {
      method: 'PUT',
      to: secure.url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pan: `{{ ${cardId} | json: '$.number' }}` }),
    });
    expect(response.status).toBe(201);
    expect(secure.received[0]).toMatchObject({ method: 'PUT', url: '/pay' });
    expect(JSON.parse(secure.received[0]!.body.toString('utf8'))).toEqual({ pan: card.number });
  });

  it('passes status, headers and body back, and never follows a redirect', async () => {
    destination.answer((_request, res) => {
      res.writeHead(302, { location: 'http://127.0.0.2/elsewhere', 'x-why': 'moved' });
      res.end('see elsewhere');
    });
    try {
      const response = await proxy('/moved', { method: 'GET' });
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe('http://127.0.0.2/elsewhere');
      expect(response.headers.get('x-why')).toBe('moved');
      expect(await response.text()).toBe('see elsewhere');
      expect(forbiddenListener.received).toHaveLength(0);
    } finally {
      destination.answer(echoAnswer);
    }
  });

  it('answers 408 when the destination takes longer than PROXY_TIMEOUT_MS', async () => {
    destination.answer(() => {
      /* never answers */
    });
    try {
      const response = await proxy('/slow', { method: 'DELETE' });
      expect(response.status).toBe(408);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
    } finally {
      destination.answer(echoAnswer);
    }
  });

  it('refuses destinations that are not public (or allow-listed) with 400, sending nothing', async () => {
    const refused = await proxy('/x', {
      to: forbiddenListener.url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ number: `{{ ${cardId} | json: '$.number' }}` }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { errors: unknown }).errors).toEqual({
      'SVC-PROXY-URL': [
        'Resolves to a loopback address, which is not allowed unless the operator lists it in PROXY_ALLOWED_PRIVATE_ADDRESSES',
      ],
    });
    for (const to of ['http://169.254.169.254/latest/meta-data', 'https://[::1]:1/', 'ftp://127.0.0.1/']) {
      expect((await proxy('/', { method: 'GET', to })).status).toBe(400);
    }
    expect((await proxy('/', { method: 'GET', to: 'not a url' })).status).toBe(400);
    const missing = await fetch(`${env.stack.url}/proxy/x`, {
      headers: { 'svc-api-key': env.tenant.apiKey },
    });
    expect(missing.status).toBe(400);
    expect(forbiddenListener.received).toHaveLength(0);
  });

  it('needs proxy:invoke (or token:use), and token:use on each token’s container; nothing sent otherwise', async () => {
    destination.received.length = 0;
    const general = await env.tenant.client.tokens.create({ data: 'general data' });
    const noInvoke = await env.tenant.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    expect((await proxy('/a', { method: 'GET', apiKey: noInvoke.key })).status).toBe(403);
    const invokeOnly = await env.tenant.client.applications.create({
      name: 'proxy caller',
      type: 'private',
      permissions: ['proxy:invoke'],
      rules: [{ container: '/general/', permissions: ['token:use'] }],
    });
    const allowed = await proxy('/b', {
      apiKey: invokeOnly.key,
      headers: { 'content-type': 'text/plain' },
      body: `{{ ${general.id} }}`,
    });
    expect(allowed.status).toBe(201);
    expect(destination.received.at(-1)!.body.toString('utf8')).toBe('general data');
    const denied = await proxy('/c', {
      apiKey: invokeOnly.key,
      headers: { 'content-type': 'text/plain' },
      body: `{{ ${cardId} | json: '$.number' }}`,
    });
    expect(denied.status).toBe(403);
    expect(await denied.text()).not.toContain(card.number);
    expect(destination.received).toHaveLength(1);
  });

  it('counts against the key’s rate limit: 429 past it, nothing sent', async () => {
    const limited = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: {
        name: 'limited proxy caller',
        type: 'private',
        permissions: ['proxy:invoke'],
        rate_limit: { requests_per_minute: 2 },
      },
    });
    expect(limited.status).toBe(201);
    destination.received.length = 0;
    const statuses: number[] = [];
    for (let call = 0; call < 3; call++) {
      const response = await proxy('/limited', { method: 'GET', apiKey: limited.body.key });
      statuses.push(response.status);
      if (call === 0) expect(response.headers.get('ratelimit')).toBeTruthy();
    }
    expect(statuses).toEqual([201, 201, 429]);
    expect(destination.received).toHaveLength(2);
  });

  it('another tenant’s token is unknown (400), and expression errors name their place, never the data', async () => {
    destination.received.length = 0;
    const other = await env.stack.createTenant('Other');
    const theirs = await other.client.tokens.create({ type: 'card', data: card });
    const unknown = await proxy('/x', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ card: `{{ ${theirs.id} }}` }),
    });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { errors: unknown }).errors).toEqual({
      request: [`No token with id ${theirs.id}`],
    });
    const badFilter = await proxy('/x', {
      headers: { 'content-type': 'application/json', 'x-card': `{{ ${cardId} | no_such_filter }}` },
      body: JSON.stringify({ card: { number: `{{ ${cardId} | to_number | last4 | json: '$' }}` } }),
    });
    expect(badFilter.status).toBe(400);
    const problem = await badFilter.text();
    expect((JSON.parse(problem) as { errors: unknown }).errors).toEqual({
      'x-card': ['Unknown filter no_such_filter'],
    });
    expect(problem).not.toContain(card.number);
    const badBody = await proxy('/x', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ card: { number: `{{ ${cardId} | json: '$.number' | to_boolean }}` } }),
    });
    expect(((await badBody.json()) as { errors: unknown }).errors).toEqual({
      'body.card.number': ['to_boolean expects a boolean or the text true or false'],
    });
    expect(destination.received).toHaveLength(0);
  });

  it('records each detokenized token as read, and never logs the card number', async () => {
    const token = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const response = await proxy('/logged', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ number: `{{ ${token.id} | json: '$.number' }}` }),
    });
    expect(response.status, await response.clone().text()).toBe(201);
    await eventually(async () => {
      const logs = await env.tenant.client.request<{ data: { entity_id: string; operation: string }[] }>(
        'GET',
        '/logs',
        { query: { entity_id: token.id } },
      );
      expect(logs.body.data.map((row) => row.operation)).toContain('read');
    }, 30_000);
    expect(env.stack.logs.join('')).not.toContain(card.number);
  });
  it('leaves no detokenized value, and no destination answer, in Redis or the logs', async () => {
    const number = uniqueCardNumber();
    const token = await env.tenant.client.tokens.create({
      type: 'card',
      data: { ...card, number },
    });
    // The destination echoes what it got, card number included.
    for (const [type, body] of [
      ['application/json', JSON.stringify({ pan: `{{ ${token.id} | json: '$.number' }}` })],
      ['application/x-www-form-urlencoded', `card[number]={{ ${token.id} | json: '$.number' }}`],
      ['text/plain', `{{ ${token.id} | json: '$.number' }}`],
    ] as const) {
      const response = await proxy('/scan', {
        headers: { 'content-type': type, 'x-pan': `{{ ${token.id} | json: '$.number' }}` },
        body,
      });
      expect(response.status).toBe(201);
      expect(await response.text()).toContain(number);
    }
    const failing = await proxy('/scan', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pan: `{{ ${token.id} | json: '$.number' | to_boolean }}` }),
    });
    expect(failing.status).toBe(400);
    expect((await everyRedisValue(env.stack.config.REDIS_URL)).join('\n')).not.toContain(number);
    expect(env.stack.logs.join('')).not.toContain(number);
  });
});
