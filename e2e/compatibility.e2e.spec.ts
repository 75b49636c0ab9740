import { BasisTheory } from '@basis-theory/basis-theory-js';
import { BasisTheoryClient, type BasisTheory as NodeSdk } from '@basis-theory/node-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { createReactor } from './support/reactors.ts';
import { useStack } from './support/stack.ts';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

describe('compatibility', () => {
  // 127.0.0.1 is allow-listed for the proxies' loopback destination.
  const env = useStack({ LOG_LEVEL: 'warn', PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let destination: TestDestination;
  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
  });
  afterAll(async () => destination?.close());

  it('serves proxies.create/get/list/update/patch/delete as Basis Theory’s Node SDK calls them', async () => {
    // As a team moving from Basis Theory runs it: its key option (sent as BT-API-KEY, with
    // BT-TRACE-ID), only the base URL changed.
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const created = await sdk.proxies.create({
      name: 'Processor',
      destinationUrl: `${destination.url}/v1`,
      configuration: { API_KEY: 'sk_test_sdk' },
      requireAuth: true,
    });
    expect(created).toMatchObject({
      name: 'Processor',
      destinationUrl: `${destination.url}/v1`,
      configuration: { API_KEY: 'sk_test_sdk' },
      requireAuth: true,
      tenantId: env.tenant.tenantId,
    });
    expect(created.key).toEqual(expect.any(String));
    expect(await sdk.proxies.get(created.id!)).toMatchObject({ id: created.id, key: created.key });
    const page = await sdk.proxies.list({ name: 'Processor' });
    expect(page.data.map((proxy) => proxy.id)).toEqual([created.id]);
    const updated = await sdk.proxies.update(created.id!, {
      name: 'Processor v2',
      destinationUrl: `${destination.url}/v2`,
      requireAuth: false,
    });
    expect(updated).toMatchObject({ name: 'Processor v2', requireAuth: false, key: created.key });
    // Basis Theory's PATCH answers no body (its SDK returns nothing): read it back.
    await sdk.proxies.patch(created.id!, { name: 'Processor v3' });
    expect(await sdk.proxies.get(created.id!)).toMatchObject({
      name: 'Processor v3',
      destinationUrl: `${destination.url}/v2`,
    });
    await sdk.proxies.delete(created.id!);
    await expect(sdk.proxies.get(created.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('tokens.create', async () => {
    // Privacy, a card with its CVC, a bank account and the single-value types, as the SDK sends
    // them (camelCase in, snake_case on the wire), answered as its Token type reads them.
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const cardToken: NodeSdk.Token = await sdk.tokens.create({
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
      privacy: { restrictionPolicy: 'redact' },
      metadata: { via: 'node-sdk' },
    });
    expect(cardToken).toMatchObject({
      type: 'card',
      containers: ['/pci/high/'],
      privacy: { classification: 'pci', impactLevel: 'high', restrictionPolicy: 'redact' },
      card: {
        bin: '42424242',
        last4: '4242',
        brand: 'visa',
        funding: 'credit',
        expirationMonth: 12,
        expirationYear: 2030,
      },
    });
    expect(cardToken.data).toBeUndefined();
    const bankToken = await sdk.tokens.create({
      type: 'bank',
      data: { routing_number: '011000015', account_number: '000123456789' },
    });
    expect(bankToken.bank).toEqual({ routingNumber: '011000015', accountNumberLast4: '6789' });
    expect(bankToken.privacy).toEqual({
      classification: 'bank',
      impactLevel: 'high',
      restrictionPolicy: 'mask',
    });
    const singleValues: [string, string, string][] = [
      ['card_number', '5555555555554444', '/pci/high/'],
      ['us_bank_account_number', '000123456789', '/bank/high/'],
      ['us_bank_routing_number', '011000015', '/bank/low/'],
      ['social_security_number', '123-45-6789', '/pii/high/'],
      ['employer_id_number', '12-3456789', '/pii/high/'],
    ];
    for (const [type, data, container] of singleValues) {
      const token = await sdk.tokens.create({ type, data });
      expect(token, type).toMatchObject({ type, containers: [container] });
    }
    const general = await sdk.tokens.create({
      data: 'x',
      privacy: { classification: 'pii', impactLevel: 'moderate' },
    });
    expect(general.containers).toEqual(['/pii/moderate/']);
    // A refusal comes back as the SDK's BadRequestError, naming the field.
    await expect(
      sdk.tokens.create({ type: 'social_security_number', data: '666-12-3456' }),
    ).rejects.toMatchObject({
      statusCode: 400,
      body: { errors: { 'body.data': [expect.stringContaining('area number')] } },
    });
  });

  it('tokens.create with an alias expression as id, then tokens.get by the drawn id', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const created = await sdk.tokens.create({
      type: 'card',
      data: card,
      id: '{{ data.number | alias_card }}',
    });
    expect(created.id).toMatch(/^424242\d{6}4242$/);
    expect(created.id).not.toBe(card.number);
    const read = await sdk.tokens.get(created.id!);
    expect(read.data).toMatchObject({ number: card.number });
  });

  it('tokens.tokenize and tokens.detokenize: a nested body of token requests, then of expressions', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const tokenized = (await sdk.tokens.tokenize({
      customer: 'c-42',
      first_name: { type: 'token', data: 'Ada' },
      cards: [{ type: 'card', data: card }, 'kept as it is'],
    })) as { customer: string; first_name: { id: string }; cards: [{ id: string; card: object }, string] };
    expect(tokenized.customer).toBe('c-42');
    expect(tokenized.cards[1]).toBe('kept as it is');
    expect(tokenized.cards[0].card).toMatchObject({ last4: '4242' });
    expect(JSON.stringify(tokenized)).not.toContain(card.number);
    const detokenized = await sdk.tokens.detokenize({
      name: `{{ ${tokenized.first_name.id} }}`,
      card: { number: `{{ ${tokenized.cards[0].id} | json: '$.number' }}` },
    });
    expect(detokenized).toEqual({ name: 'Ada', card: { number: card.number } });
  });

  it('tokenIntents.create (with a public key), get and delete, and tokens.create({ tokenIntentId })', async () => {
    const publicApplication = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Checkout form', type: 'public', permissions: ['token-intent:create'] },
    });
    expect(publicApplication.status).toBe(201);
    const browser = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: publicApplication.body.key });
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const data = { ...card, cvc: '123' };
    const created: NodeSdk.CreateTokenIntentResponse = await browser.tokenIntents.create({
      type: 'card',
      data,
    });
    expect(created).toMatchObject({ type: 'card', tenantId: env.tenant.tenantId, card: { last4: '4242' } });
    // It holds a CVC: it lives as long as the CVC may be kept (CARD_CVC_TTL_SECONDS, an hour).
    expect(created.expiresAt!.getTime() - created.createdAt!.getTime()).toBe(3600_000);
    const read: NodeSdk.TokenIntent = await sdk.tokenIntents.get(created.id!);
    // A read shows the first six and the last four, no fingerprint (docs/compatibility.md).
    const { fingerprint: _fingerprint, ...withoutFingerprint } = created;
    expect(created.fingerprint).toBeTruthy();
    expect(read).toEqual({ ...withoutFingerprint, card: { ...created.card, bin: '424242' } });
    const token: NodeSdk.Token = await sdk.tokens.create({
      tokenIntentId: created.id!,
      metadata: { order: 'o-9' },
    });
    expect(token).toMatchObject({ type: 'card', metadata: { order: 'o-9' } });
    expect((await sdk.tokens.get(token.id!)).data).toEqual(data);
    await expect(sdk.tokenIntents.get(created.id!)).rejects.toMatchObject({ statusCode: 404 });
    const deleted = await browser.tokenIntents.create({
      type: 'bank',
      data: { routing_number: '021000021', account_number: '000123456789' },
    });
    expect(deleted.bank).toEqual({ routingNumber: '021000021', accountNumberLast4: '6789' });
    await sdk.tokenIntents.delete(deleted.id!);
    await expect(sdk.tokenIntents.get(deleted.id!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('tokens.get', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const created = await sdk.tokens.create({
      type: 'card',
      data: { number: '378282246310005', expiration_month: 1, expiration_year: 2031, cvc: '1234' },
    });
    const token: NodeSdk.Token = await sdk.tokens.get(created.id!);
    expect(token.data).toEqual({
      number: '378282246310005',
      expiration_month: 1,
      expiration_year: 2031,
      cvc: '1234',
    });
    expect(token.card).toEqual({
      bin: '378282',
      last4: '0005',
      brand: 'american-express',
      funding: 'credit',
      expirationMonth: 1,
      expirationYear: 2031,
    });
    expect(token.privacy?.restrictionPolicy).toBe('mask');
  });

  it('applications.create with the anchor’s access rules, tokens.create with a mask, read masked by the new key', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const application: NodeSdk.Application = await sdk.applications.create({
      name: 'support (node-sdk)',
      type: 'private',
      rules: [
        {
          description: 'Cards masked',
          priority: 1,
          container: '/pci/',
          transform: 'mask',
          permissions: ['token:read'],
        },
        {
          description: 'The rest in full',
          priority: 2,
          container: '/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    });
    expect(application.rules).toEqual([
      {
        description: 'Cards masked',
        priority: 1,
        container: '/pci/',
        transform: 'mask',
        permissions: ['token:read'],
      },
      {
        description: 'The rest in full',
        priority: 2,
        container: '/',
        transform: 'reveal',
        permissions: ['token:read'],
      },
    ]);
    const created = await sdk.tokens.create({
      type: 'card_number',
      data: '4242424242424242',
      mask: '{{ data | reveal_last: 4, "*" }}',
    });
    expect(created.mask).toBe('{{ data | reveal_last: 4, "*" }}');
    const support = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: application.key! });
    const masked: NodeSdk.Token = await support.tokens.get(created.id!);
    expect(masked.data).toBe('************4242');
    expect(masked.card?.last4).toBe('4242');
  });

  it('tokens.update with privacy (impact level, restriction policy) and mask null', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const note = await sdk.tokens.create({ data: 'order 42', privacy: { impactLevel: 'high' } });
    expect(note.containers).toEqual(['/general/high/']);
    // The token follows its privacy to /general/low/, as a create without containers puts it.
    const lowered: NodeSdk.Token = await sdk.tokens.update(note.id!, {
      privacy: { impactLevel: 'low', restrictionPolicy: 'mask' },
    });
    expect(lowered.privacy).toEqual({
      classification: 'general',
      impactLevel: 'low',
      restrictionPolicy: 'mask',
    });
    expect(lowered.containers).toEqual(['/general/low/']);
    expect((await sdk.tokens.get(note.id!)).privacy?.impactLevel).toBe('low');

    const number = await sdk.tokens.create({
      type: 'card_number',
      data: '4242424242424242',
      mask: '{{ data | reveal_last: 4, "*" }}',
    });
    const redacting: NodeSdk.Token = await sdk.tokens.update(number.id!, {
      privacy: { restrictionPolicy: 'redact' },
      mask: null,
    });
    expect(redacting.privacy).toEqual({
      classification: 'pci',
      impactLevel: 'high',
      restrictionPolicy: 'redact',
    });
    expect(redacting.mask).toBe('{{ data | reveal_last: 4 }}');
    expect(redacting.containers).toEqual(['/pci/high/']);
    // A card number stays high, and its classification stays pci: 400s naming the field.
    await expect(sdk.tokens.update(number.id!, { privacy: { impactLevel: 'low' } })).rejects.toMatchObject({
      statusCode: 400,
      body: { errors: { 'body.privacy.impact_level': [expect.stringContaining('high')] } },
    });
  });

  it('serves webhooks.ping/create/get/list/update/delete and webhooks.events.list as Basis Theory’s Node SDK calls them', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    await sdk.webhooks.ping();
    expect(await sdk.webhooks.events.list()).toContain('token:created');
    // A public address (nothing resolves) and an event no other spec here makes: nothing is sent.
    const created = await sdk.webhooks.create({
      name: 'Orders',
      url: 'https://93.184.216.34/hooks',
      notifyEmail: 'ops@example.com',
      events: ['reactor:deleted'],
    });
    expect(created).toMatchObject({
      name: 'Orders',
      url: 'https://93.184.216.34/hooks',
      notifyEmail: 'ops@example.com',
      events: ['reactor:deleted'],
      status: 'enabled',
      tenantId: env.tenant.tenantId,
    });
    expect(created.createdAt).toBeInstanceOf(Date);
    expect(await sdk.webhooks.get(created.id)).toMatchObject({ id: created.id, name: 'Orders' });
    const page = await sdk.webhooks.list();
    expect(page.data.map((webhook) => webhook.id)).toContain(created.id);
    const updated = await sdk.webhooks.update(created.id, {
      name: 'Orders v2',
      url: 'https://93.184.216.34/v2',
      events: ['reactor:deleted', 'proxy:deleted'],
    });
    expect(updated).toMatchObject({ name: 'Orders v2', url: 'https://93.184.216.34/v2', status: 'enabled' });
    await sdk.webhooks.delete(created.id);
    await expect(sdk.webhooks.get(created.id)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('invokes a pre-configured proxy through basis-theory-js 4’s proxy.post', async () => {
    const cardId = (await env.tenant.client.tokens.create({ type: 'card', data: card })).id;
    const created = await env.tenant.client.request<{ key: string }>('POST', '/proxies', {
      body: { name: 'Charges', destination_url: `${destination.url}/v1` },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // basis-theory-js speaks http to localhost only; its key goes as BT-API-KEY, as it always does.
    const bt = await new BasisTheory().init(env.tenant.apiKey, {
      apiBaseUrl: env.stack.url.replace('127.0.0.1', 'localhost'),
    });
    destination.received.length = 0;
    const answer: unknown = await bt.proxy.post({
      path: '/charges',
      query: { amount: '10' },
      headers: { 'BT-PROXY-KEY': created.body.key },
      body: { number: `{{ ${cardId} | json: '$.number' }}` },
    });
    expect(destination.received).toHaveLength(1);
    expect(destination.received[0]!.url).toBe('/v1/charges?amount=10');
    expect(JSON.parse(destination.received[0]!.body.toString('utf8'))).toEqual({ number: card.number });
    expect(answer).toMatchObject({ method: 'POST', url: '/v1/charges?amount=10' });
  });

  it('searches through basis-theory-js 4’s tokens.search (POST /tokens/search with pages)', async () => {
    const customer = `c-js-${Date.now()}`;
    const ids: string[] = [];
    for (const ssn of ['123-45-6789', '587-65-6789']) {
      const created = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
        body: {
          type: 'social_security_number',
          data: ssn,
          search_indexes: ['{{ data | last4 }}'],
          metadata: { customer },
        },
      });
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    const bt = await new BasisTheory().init(env.tenant.apiKey, {
      apiBaseUrl: env.stack.url.replace('127.0.0.1', 'localhost'),
    });
    const query = `data:6789 AND metadata.customer:${customer}`;
    const first = await bt.tokens.search({ query, page: 1, size: 1 });
    expect(first.pagination).toMatchObject({ pageNumber: 1, pageSize: 1 });
    expect(first.data.map((token) => [token.id, token.data])).toEqual([[ids[1], '587-65-6789']]);
    const second = await bt.tokens.search({ query, page: 2, size: 1 });
    expect(second.data.map((token) => token.id)).toEqual([ids[0]]);
    await expect(bt.tokens.search({ query: 'ssn:6789' })).rejects.toMatchObject({ status: 400 });
  });

  it('accepts role ADMIN on an invitation, and names body.role for anything else', async () => {
    const admin = await env.tenant.client.request<{ status: string }>('POST', '/tenants/self/invitations', {
      body: { email: 'new-admin@example.com', role: 'ADMIN' },
    });
    expect(admin.status, JSON.stringify(admin.body)).toBe(201);
    expect(admin.body.status).toBe('PENDING');
    for (const role of ['OWNER', 'admin', 1, null]) {
      const refused = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
        'POST',
        '/tenants/self/invitations',
        { body: { email: 'someone@example.com', role } },
      );
      expect(refused.status, String(role)).toBe(400);
      expect(Object.keys(refused.body.errors)).toEqual(['body.role']);
    }
  });

  it('echoes X-Request-Id, else takes the trace-id of a W3C traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
    const traced = await env.tenant.client.request<{ request_id?: string }>('GET', '/tokens/missing', {
      headers: { traceparent },
    });
    expect(traced.status).toBe(404);
    expect(traced.headers.get('x-request-id')).toBe(traceId);
    expect(traced.body.request_id).toBe(traceId);
    const both = await env.tenant.client.request('GET', '/applications', {
      headers: { traceparent, 'x-request-id': 'mine-1' },
    });
    expect(both.headers.get('x-request-id')).toBe('mine-1');
    for (const invalid of [
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-${traceId}-${'0'.repeat(16)}-01`,
      `ff-${traceId}-00f067aa0ba902b7-01`,
      `00-${traceId.toUpperCase()}-00f067aa0ba902b7-01`,
      'garbage',
    ]) {
      const answer = await env.tenant.client.request('GET', '/applications', {
        headers: { traceparent: invalid },
      });
      const id = answer.headers.get('x-request-id');
      expect(id, invalid).not.toBe(traceId);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('takes Basis Theory’s header names: BT-TRACE-ID as the request id, BT-IDEMPOTENCY-KEY as the idempotency key', async () => {
    const traced = await env.tenant.client.request<{ request_id?: string }>('GET', '/tokens/missing', {
      headers: { 'BT-TRACE-ID': 'bt-trace-1' },
    });
    expect(traced.headers.get('x-request-id')).toBe('bt-trace-1');
    expect(traced.body.request_id).toBe('bt-trace-1');
    const create = () =>
      env.tenant.client.request<{ id: string }>('POST', '/tenants/self/invitations', {
        headers: { 'BT-IDEMPOTENCY-KEY': `bt-idem-${env.tenant.tenantId}` },
        body: { email: 'once@example.com', role: 'ADMIN' },
      });
    const first = await create();
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const replay = await create();
    expect(replay.body.id).toBe(first.body.id);
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    const both = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'GET',
      '/applications',
      {
        headers: { 'BT-TRACE-ID': 'one', 'x-request-id': 'two' },
      },
    );
    expect(both.status).toBe(400);
    expect(Object.keys(both.body.errors)).toEqual(['headers.bt-trace-id']);
  });

  it('serves GET /v2/tokens as Basis Theory’s Node SDK reads it (tokens.listV2)', async () => {
    const { client, apiKey } = env.tenant;
    // Basis Theory's own client, pointed at the service, unpatched.
    const sdkWith = (key: string) => new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: key });
    const batch = `b-${Date.now()}`;
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      ids.push((await client.tokens.create({ data: `v2-${index}`, metadata: { batch } })).id);
    }
    const cardToken = await client.tokens.create({ type: 'card', data: card, metadata: { batch } });
    await client.tokens.create({ data: 'other batch', metadata: { batch: 'other' } });

    // Cursor pages of 2 (start, size), followed to the end by the SDK itself; newest first.
    const page = await sdkWith(apiKey).tokens.listV2({ metadata: { batch }, size: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.hasNextPage()).toBe(true);
    const all: string[] = [];
    for await (const token of page) all.push(token.id!);
    expect(all).toEqual([cardToken.id, ...[...ids].reverse()]);
    // On the wire: the page size and the next cursor, which is absent on the last page.
    const wire = async (start?: string) =>
      (
        await client.request<{ pagination: Record<string, unknown>; data: unknown[] }>('GET', '/v2/tokens', {
          query: { metadata: JSON.stringify({ batch }), size: 4, start },
        })
      ).body;
    const first = await wire();
    expect(first.pagination).toEqual({ page_size: 4, next: expect.any(String) });
    const second = await wire(first.pagination.next as string);
    expect(second.pagination).toEqual({ page_size: 4 });
    expect(second.data).toHaveLength(2);

    // The filters of GET /tokens: type and container.
    const cards = await sdkWith(apiKey).tokens.listV2({ metadata: { batch }, type: 'card' });
    expect(cards.data.map((token) => token.id)).toEqual([cardToken.id]);
    expect(cards.data[0]!.data).toEqual(card);
    expect(cards.hasNextPage()).toBe(false);
    const underPci = await sdkWith(apiKey).tokens.listV2({ metadata: { batch }, container: '/pci/' });
    expect(underPci.data.map((token) => token.id)).toEqual([cardToken.id]);

    // Container rules: a key that may read under /pci/ only lists only those.
    const pciOnly = await client.applications.create({
      name: 'v2 pci reader',
      type: 'private',
      rules: [{ container: '/pci/', permissions: ['token:read'] }],
    });
    const scoped = await sdkWith(pciOnly.key).tokens.listV2({ metadata: { batch } });
    expect(scoped.data.map((token) => token.id)).toEqual([cardToken.id]);
    // Without token:read at all: the SDK's ForbiddenError.
    const writer = await client.applications.create({
      name: 'v2 writer',
      type: 'private',
      permissions: ['token:create'],
    });
    await expect(sdkWith(writer.key).tokens.listV2()).rejects.toMatchObject({ statusCode: 403 });

    // Every token the list opened is on record as read, like GET /tokens.
    await eventually(async () => {
      const logs = await client.request<{ data: { operation: string; actor_id?: string }[] }>(
        'GET',
        '/logs',
        {
          query: { entity_id: cardToken.id, size: 100 },
        },
      );
      const reads = logs.body.data.filter((log) => log.operation === 'read');
      // The owner’s key: the first SDK page, the first wire page, the card filter, the container
      // filter; then the scoped key.
      const owner = env.tenant.applicationId;
      expect(reads.map((log) => log.actor_id).sort()).toEqual(
        [owner, owner, owner, owner, pciOnly.id].sort(),
      );
    });

    // A bad query names its field; the cursor must be one the service gave.
    const bad = await client.request<{ errors: Record<string, string[]> }>('GET', '/v2/tokens', {
      query: { metadata: 'not json', size: 101 },
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['query.metadata', 'query.size']);
  });

  it('serves POST /v2/tokens/search as Basis Theory’s Node SDK calls it (tokens.searchV2), with searchIndexes and fingerprintExpression on tokens.create', async () => {
    const sdk = new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const customer = `c-${Date.now()}`;
    const ids: string[] = [];
    for (const ssn of ['123-45-6789', '587-65-6789', '123-45-0001']) {
      const token = await sdk.tokens.create({
        type: 'social_security_number',
        data: ssn,
        searchIndexes: ['{{ data | last4 }}'],
        fingerprintExpression: '{{ data | remove: "-" }}',
        metadata: { customer },
      });
      expect(token.searchIndexes).toEqual(['{{ data | last4 }}']);
      expect(token.fingerprintExpression).toBe('{{ data | remove: "-" }}');
      ids.push(token.id!);
    }
    // One page of one, then the SDK follows the cursor itself; newest first.
    const page = await sdk.tokens.searchV2({ query: `data:6789 AND metadata.customer:${customer}`, size: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({ id: ids[1], data: '587-65-6789' });
    const found: string[] = [];
    for await (const token of page) found.push(token.id!);
    expect(found).toEqual([ids[1], ids[0]]);
    // A field that is not searchable: the SDK's BadRequestError naming body.query.
    await expect(sdk.tokens.searchV2({ query: 'ssn:6789' })).rejects.toMatchObject({
      statusCode: 400,
      body: { errors: { 'body.query': [expect.stringContaining('ssn is not searchable')] } },
    });
  });

  describe('application keys, the caller’s application, permissions and reactor patches, as the Node SDK calls them', () => {
    // Basis Theory's own client, pointed at the service, unpatched: its key goes as BT-API-KEY.
    const sdk = (key = env.tenant.apiKey) => new BasisTheoryClient({ baseUrl: env.stack.url, apiKey: key });
    const newApplication = async () =>
      env.tenant.client.applications.create({
        name: 'SDK keys',
        type: 'private',
        permissions: ['token:create'],
      });

    it('applicationKeys.create', async () => {
      const application = await newApplication();
      // The SDK sends no body: a key that never expires.
      const created = await sdk().applicationKeys.create(application.id);
      expect(created).toMatchObject({
        id: expect.any(String),
        key: expect.stringMatching(/^tv_prv_/),
        createdBy: env.tenant.applicationId,
        createdAt: expect.any(Date),
      });
      const byKey = await sdk(created.key).applications.getByKey();
      expect(byKey.id).toBe(application.id);
    });

    it('applicationKeys.list', async () => {
      const application = await newApplication();
      const created = await sdk().applicationKeys.create(application.id);
      const listed = await sdk().applicationKeys.list(application.id);
      expect(listed.map((key) => key.id)).toEqual([application.id, created.id]);
      expect(listed.every((key) => key.key === undefined)).toBe(true);
      await expect(sdk().applicationKeys.list('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({
        statusCode: 404,
      });
    });

    it('applicationKeys.get', async () => {
      const application = await newApplication();
      const created = await sdk().applicationKeys.create(application.id);
      const read = await sdk().applicationKeys.get(application.id, created.id!);
      expect(read).toMatchObject({
        id: created.id,
        createdBy: created.createdBy,
        createdAt: created.createdAt,
      });
      expect(read).not.toHaveProperty('key');
    });

    it('applicationKeys.delete', async () => {
      const application = await newApplication();
      const created = await sdk().applicationKeys.create(application.id);
      await sdk().applicationKeys.delete(application.id, application.id);
      await expect(sdk(application.key).applications.getByKey()).rejects.toMatchObject({ statusCode: 401 });
      expect((await sdk(created.key).applications.getByKey()).id).toBe(application.id);
      await expect(sdk().applicationKeys.get(application.id, application.id)).rejects.toMatchObject({
        statusCode: 404,
      });
    });

    it('applications.getByKey', async () => {
      const application = await sdk().applications.getByKey();
      expect(application).toMatchObject({
        id: env.tenant.applicationId,
        tenantId: env.tenant.tenantId,
        type: 'management',
      });
    });

    it('permissions.list', async () => {
      const all = await sdk().permissions.list();
      expect(all.find((permission) => permission.type === 'token:create')).toEqual({
        type: 'token:create',
        description: expect.any(String),
        applicationTypes: ['private', 'public', 'management'],
      });
      const forPublic = await sdk().permissions.list({ applicationType: 'public' });
      expect(forPublic.map((permission) => permission.type)).toEqual(['token:create', 'token-intent:create']);
    });

    it('reactors.patch', async () => {
      const reactorId = await createReactor(
        env.tenant,
        {
          code: 'module.exports = async (req) => ({ raw: req.configuration });',
          configuration: [{ name: 'URL', type: 'string' }],
        },
        { configuration: { URL: 'https://one.example' } },
      );
      // Basis Theory's PATCH answers nothing the SDK reads: read it back.
      await sdk().reactors.patch(reactorId, { name: 'Patched by the SDK' });
      expect(await sdk().reactors.get(reactorId)).toMatchObject({
        name: 'Patched by the SDK',
        configuration: { URL: 'https://one.example' },
      });
      await sdk().reactors.patch(reactorId, { configuration: { URL: 'https://two.example' } });
      expect((await sdk().reactors.get(reactorId)).configuration).toEqual({ URL: 'https://two.example' });
    });
  });
});
