import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { useStack } from './support/stack.ts';
import { createReactor, echoArgs } from './support/reactors.ts';
import { echoAnswer, startHttpDestination, type TestDestination } from './support/destinations.ts';

interface Problem {
  status: number;
  errors?: Record<string, string[]>;
}
interface Proxy {
  id: string;
  key: string;
  tenant_id: string;
  name: string;
  destination_url: string;
  request_reactor_id?: string;
  response_reactor_id?: string;
  request_transforms: { type: string; code: string }[];
  response_transforms: { type: string; code: string }[];
  application_id?: string;
  configuration: Record<string, string>;
  require_auth: boolean;
  timeout?: number;
  created_by?: string;
  created_at?: string;
  modified_by?: string;
  modified_at?: string;
}
interface Page<T> {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number };
  data: T[];
}

const transform = { type: 'code', code: 'module.exports = async function (req) { return req.args; };' };

describe('pre-configured proxies: /proxies', () => {
  // 127.0.0.1 is the operator's allow-listed internal address (plain http is allowed to it only).
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  const client = () => env.tenant.client;
  const create = async (body: Record<string, unknown>) => {
    const response = await client().request<Proxy>('POST', '/proxies', { body });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body;
  };

  it('creates, reads, lists, replaces, patches and deletes a proxy; its key stays the same', async () => {
    const reactorId = await createReactor(env.tenant, { code: echoArgs });
    const application = await client().applications.create({ name: 'Proxy app', type: 'private' });
    const proxy = await create({
      name: 'Payments',
      destination_url: 'http://127.0.0.1:9/v1',
      request_reactor_id: reactorId,
      request_transforms: [transform],
      application: { id: application.id },
      configuration: { API_KEY: 'sk_test_proxy' },
      timeout: 5,
    });
    expect(proxy).toMatchObject({
      tenant_id: env.tenant.tenantId,
      name: 'Payments',
      destination_url: 'http://127.0.0.1:9/v1',
      request_reactor_id: reactorId,
      request_transforms: [transform],
      response_transforms: [],
      application_id: application.id,
      configuration: { API_KEY: 'sk_test_proxy' },
      require_auth: true,
      timeout: 5,
      created_by: env.tenant.applicationId,
    });
    // At least 128 random bits (base64url: 6 bits a character).
    expect(proxy.key).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect((await client().request('GET', `/proxies/${proxy.id}`)).body).toEqual(proxy);

    const replaced = await client().request<Proxy>('PUT', `/proxies/${proxy.id}`, {
      body: { name: 'Payments v2', destination_url: 'http://127.0.0.1:9/v2', require_auth: false },
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body).toMatchObject({
      key: proxy.key,
      name: 'Payments v2',
      destination_url: 'http://127.0.0.1:9/v2',
      request_transforms: [],
      configuration: {},
      require_auth: false,
      created_at: proxy.created_at,
      modified_by: env.tenant.applicationId,
    });
    expect(replaced.body.request_reactor_id).toBeUndefined();
    expect(replaced.body.application_id).toBeUndefined();

    const patched = await client().request<Proxy>('PATCH', `/proxies/${proxy.id}`, {
      body: { configuration: { TOKEN: 'x' }, response_reactor_id: reactorId, timeout: 2 },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Payments v2',
      configuration: { TOKEN: 'x' },
      response_reactor_id: reactorId,
      timeout: 2,
      require_auth: false,
    });
    const unset = await client().request<Proxy>('PATCH', `/proxies/${proxy.id}`, {
      body: { response_reactor_id: null, timeout: null },
    });
    expect(unset.body.response_reactor_id).toBeUndefined();
    expect(unset.body.timeout).toBeUndefined();
    expect(unset.body.configuration).toEqual({ TOKEN: 'x' });
    expect((await client().request('GET', `/proxies/${proxy.id}`)).body).toEqual(unset.body);

    expect((await client().request('DELETE', `/proxies/${proxy.id}`)).status).toBe(204);
    expect((await client().request('GET', `/proxies/${proxy.id}`)).status).toBe(404);
    expect((await client().request('PATCH', `/proxies/${proxy.id}`, { body: { name: 'x' } })).status).toBe(
      404,
    );
    expect((await client().request('DELETE', `/proxies/${proxy.id}`)).status).toBe(404);
  });

  it('lists in the pagination envelope, with a name filter and ids', async () => {
    const first = await create({ name: 'Stripe inbound', destination_url: 'http://127.0.0.1:9/' });
    const second = await create({ name: 'Adyen outbound', destination_url: 'http://127.0.0.1:9/' });
    const byName = await client().request<Page<Proxy>>('GET', '/proxies', { query: { name: 'stripe' } });
    expect(byName.status).toBe(200);
    expect(byName.body.data.map((item) => item.id)).toEqual([first.id]);
    expect(byName.body.pagination).toMatchObject({ total_items: 1, page_number: 1 });
    const pattern = await client().request<Page<Proxy>>('GET', '/proxies', { query: { name: '*outbound' } });
    expect(pattern.body.data.map((item) => item.id)).toEqual([second.id]);
    const page = await client().request<Page<Proxy>>('GET', '/proxies', { query: { size: 1, page: 2 } });
    expect(page.body.pagination.page_size).toBe(1);
    expect(page.body.data).toHaveLength(1);
  });

  it('names each wrong field, and checks the destination, reactors and application', async () => {
    const wrong = await client().request<Problem>('POST', '/proxies', {
      body: {
        name: 'x'.repeat(201),
        destination_url: 'http://127.0.0.1:9/',
        request_transforms: [{ type: 'mask', code: 'x' }],
        configuration: { n: 1 },
        require_auth: 'no',
        timeout: -1,
        extra: true,
      },
    });
    expect(wrong.status).toBe(400);
    expect(Object.keys(wrong.body.errors ?? {}).sort()).toEqual(
      [
        'body.name',
        'body.request_transforms.0.type',
        'body.configuration.n',
        'body.require_auth',
        'body.timeout',
        'body.extra',
      ].sort(),
    );
    const missing = await client().request<Problem>('POST', '/proxies', { body: {} });
    expect(Object.keys(missing.body.errors ?? {}).sort()).toEqual(['body.destination_url', 'body.name']);

    for (const destination_url of [
      'http://127.0.0.2/',
      'https://10.0.0.1/',
      'not a url',
      'ftp://127.0.0.1/',
    ]) {
      const refused = await client().request<Problem>('POST', '/proxies', {
        body: { name: 'p', destination_url },
      });
      expect(refused.status, destination_url).toBe(400);
      expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.destination_url']);
    }

    const other = await env.stack.createTenant('Other');
    const foreignReactor = await createReactor(other, { code: echoArgs });
    const notMine = await client().request<Problem>('POST', '/proxies', {
      body: { name: 'p', destination_url: 'http://127.0.0.1:9/', response_reactor_id: foreignReactor },
    });
    expect(notMine.status).toBe(400);
    expect(Object.keys(notMine.body.errors ?? {})).toEqual(['body.response_reactor_id']);
    const foreignApplication = await other.client.applications.create({ name: 'a', type: 'private' });
    const noApplication = await client().request<Problem>('POST', '/proxies', {
      body: { name: 'p', destination_url: 'http://127.0.0.1:9/', application: { id: foreignApplication.id } },
    });
    expect(noApplication.status).toBe(400);
    expect(Object.keys(noApplication.body.errors ?? {})).toEqual(['body.application.id']);
  });

  it('hides another tenant’s proxies, and asks for proxy:* permissions', async () => {
    const mine = await create({ name: 'Mine', destination_url: 'http://127.0.0.1:9/' });
    const other = await env.stack.createTenant('Snoop');
    expect((await other.client.request('GET', `/proxies/${mine.id}`)).status).toBe(404);
    expect((await other.client.request('DELETE', `/proxies/${mine.id}`)).status).toBe(404);
    const listed = await other.client.request<Page<Proxy>>('GET', '/proxies');
    expect(listed.body.data).toEqual([]);

    const reader = await client().applications.create({
      name: 'Reader',
      type: 'management',
      permissions: ['proxy:read'],
    });
    const readerClient = client().withKey(reader.key);
    expect((await readerClient.request('GET', `/proxies/${mine.id}`)).status).toBe(200);
    for (const [method, path] of [
      ['POST', '/proxies'],
      ['PUT', `/proxies/${mine.id}`],
      ['PATCH', `/proxies/${mine.id}`],
      ['DELETE', `/proxies/${mine.id}`],
    ] as const) {
      const body = method === 'DELETE' ? {} : { body: { name: 'x', destination_url: 'http://127.0.0.1:9/' } };
      expect((await readerClient.request(method, path, body)).status, `${method} ${path}`).toBe(403);
    }
  });

  it('keeps the configuration and the key out of the events, the read model and the logs', async () => {
    const secret = `sk_live_${Date.now()}`;
    const proxy = await create({
      name: 'Sealed',
      destination_url: 'http://127.0.0.1:9/',
      configuration: { secret },
    });
    const events = await env.stack.service.runtime.ownerPool.query<{ data: unknown }>(
      `SELECT data FROM es_events WHERE event_type LIKE 'Proxy%'`,
    );
    const rows = await env.stack.service.runtime.ownerPool.query('SELECT * FROM proxies');
    const written = JSON.stringify([events.rows, rows.rows]);
    expect(written).not.toContain(secret);
    expect(written).not.toContain(proxy.key);
    await eventually(async () => {
      const logs = await client().request<{ data: { entity_type: string; entity_id: string }[] }>(
        'GET',
        '/logs',
        {
          query: { entity_type: 'proxy' },
        },
      );
      expect(logs.body.data.map((row) => row.entity_id)).toContain(proxy.id);
    });
    expect(env.stack.logs.join('\n')).not.toContain(secret);
    expect(env.stack.logs.join('\n')).not.toContain(proxy.key);
  });

  describe('invoked through /proxy/** with its key', () => {
    let destination: TestDestination;
    let cardId: string;
    beforeAll(async () => {
      destination = await startHttpDestination('127.0.0.1');
      cardId = (
        await client().tokens.create({
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 4, expiration_year: 2029 },
        })
      ).id;
    });
    afterAll(async () => destination?.close());

    const invoke = (path: string, headers: Record<string, string>, body?: unknown) =>
      fetch(`${env.stack.url}/proxy${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body ?? { number: `{{ ${cardId} | json: '$.number' }}` }),
        redirect: 'manual',
      });

    it('with require_auth: the destination is the proxy’s, the caller’s key detokenizes, the proxy key is not sent', async () => {
      const proxy = await create({ name: 'Outbound', destination_url: `${destination.url}/v1?fixed=1` });
      destination.received.length = 0;
      const response = await invoke(`/charges?amount=5&svc-proxy-key=${proxy.key}`, {
        'svc-api-key': env.tenant.apiKey,
      });
      expect(response.status).toBe(201);
      expect(destination.received).toHaveLength(1);
      const received = destination.received[0]!;
      expect(received.url).toBe('/v1/charges?fixed=1&amount=5');
      expect(JSON.parse(received.body.toString('utf8'))).toEqual({ number: '4242424242424242' });
      const viaHeader = await invoke('/charges', {
        'svc-api-key': env.tenant.apiKey,
        'svc-proxy-key': proxy.key,
      });
      expect(viaHeader.status).toBe(201);
      const headers = JSON.stringify(destination.received.map((request) => request.headers));
      expect(headers).not.toContain(proxy.key);
      expect(headers).not.toContain(env.tenant.apiKey);
      expect(received.url).not.toContain(proxy.key);

      destination.received.length = 0;
      // No API key, an unknown key, another tenant's API key: 401, nothing sent.
      expect((await invoke('/x', { 'svc-proxy-key': proxy.key })).status).toBe(401);
      expect((await invoke('/x', { 'svc-proxy-key': 'nope', 'svc-api-key': env.tenant.apiKey })).status).toBe(
        401,
      );
      const other = await env.stack.createTenant('Caller elsewhere');
      expect((await invoke('/x', { 'svc-proxy-key': proxy.key, 'svc-api-key': other.apiKey })).status).toBe(
        401,
      );
      const noInvoke = await client().applications.create({
        name: 'No invoke',
        type: 'private',
        permissions: ['token:read'],
      });
      expect((await invoke('/x', { 'svc-proxy-key': proxy.key, 'svc-api-key': noInvoke.key })).status).toBe(
        403,
      );
      expect(destination.received).toEqual([]);
    });

    it('without require_auth: anyone with its key calls it, and nothing is detokenized', async () => {
      const proxy = await create({
        name: 'Inbound webhook',
        destination_url: `${destination.url}/hooks`,
        require_auth: false,
      });
      destination.received.length = 0;
      const expression = `{{ ${cardId} | json: '$.number' }}`;
      const response = await invoke('/card', { 'svc-proxy-key': proxy.key }, { number: expression });
      expect(response.status).toBe(201);
      expect(destination.received).toHaveLength(1);
      expect(destination.received[0]!.url).toBe('/hooks/card');
      expect(JSON.parse(destination.received[0]!.body.toString('utf8'))).toEqual({ number: expression });
      // Deleted: its key invokes nothing any more.
      expect((await client().request('DELETE', `/proxies/${proxy.id}`)).status).toBe(204);
      expect((await invoke('/card', { 'svc-proxy-key': proxy.key })).status).toBe(401);
    });

    it('an inbound webhook without auth: its code transform tokenizes the card as the proxy’s application before it is sent', async () => {
      const application = await client().applications.create({
        name: 'Inbound tokenizer',
        type: 'private',
        permissions: ['token:create'],
      });
      const proxy = await create({
        name: 'Inbound card webhook',
        destination_url: `${destination.url}/hooks`,
        require_auth: false,
        application: { id: application.id },
        configuration: { field: 'card' },
        request_transforms: [
          {
            type: 'code',
            code: `module.exports = async function (req) {
              const field = req.configuration.field;
              const token = await req.svc.tokens.create({ type: 'card', data: req.args.body[field] });
              return { headers: req.args.headers, body: { ...req.args.body, [field]: token.id } };
            };`,
          },
        ],
      });
      destination.received.length = 0;
      const card = { number: '4000056655665556', expiration_month: 7, expiration_year: 2031 };
      const response = await invoke('/payments', { 'svc-proxy-key': proxy.key }, { event: 'paid', card });
      expect(response.status).toBe(201);
      expect(destination.received).toHaveLength(1);
      const forwarded = destination.received[0]!.body.toString('utf8');
      expect(forwarded).not.toContain(card.number);
      const tokenId = (JSON.parse(forwarded) as { card: string }).card;
      expect((await client().tokens.get(tokenId)).data).toEqual(card);
    });

    it('a proxy’s own timeout lowers PROXY_TIMEOUT_MS: 408', async () => {
      const proxy = await create({
        name: 'Slow',
        destination_url: `${destination.url}/slow`,
        require_auth: false,
        timeout: 0.5,
      });
      destination.answer(() => {
        /* never answers */
      });
      try {
        const started = performance.now();
        const response = await invoke('', { 'svc-proxy-key': proxy.key });
        expect(response.status).toBe(408);
        // The stack keeps PROXY_TIMEOUT_MS at its 30 s default: only the proxy's 0.5 s answers this soon.
        expect(performance.now() - started).toBeLessThan(5_000);
      } finally {
        destination.answer(echoAnswer);
      }
    });
  });
});

describe('a proxy without require_auth: its own rate limit', () => {
  // The service default (here 2 a minute) is what a keyless call counts against, per proxy.
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '2' });
  let destination: TestDestination;
  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
  });
  afterAll(async () => destination?.close());

  it('answers 429 past the default quota, counted per proxy, and sends nothing then', async () => {
    const created = await env.tenant.client.request<Proxy>('POST', '/proxies', {
      body: { name: 'Webhook', destination_url: `${destination.url}/hooks`, require_auth: false },
    });
    expect(created.status).toBe(201);
    const call = () =>
      fetch(`${env.stack.url}/proxy/event`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'svc-proxy-key': created.body.key },
        body: '{"event":"paid"}',
      });
    const answers = [await call(), await call(), await call()];
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 429]);
    expect(answers[2]!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(answers[0]!.headers.get('ratelimit-policy')).toContain('"proxy"');
    expect(destination.received).toHaveLength(2);
  });
});
