import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from './support/clock.ts';
import { startStack, useStack, type TestStack, type TestTenant } from './support/stack.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
const bank = { routing_number: '011000015', account_number: '1234567890' };

describe('tokens', () => {
  const env = useStack();

  it('creates a token of each type without echoing data, then reads it with data', async () => {
    for (const [type, data, container] of [
      ['token', { any: ['json', 1, true, null], nested: { ok: 'é✓' } }, '/general/high/'],
      ['card', card, '/pci/high/'],
      ['bank', bank, '/bank/high/'],
    ] as const) {
      const created = await env.tenant.client.request<Record<string, unknown>>('POST', '/tokens', {
        body: { type, data },
      });
      expect(created.status).toBe(201);
      expect(created.body).not.toHaveProperty('data');
      expect(created.body).toMatchObject({
        type,
        tenant_id: env.tenant.tenantId,
        containers: [container],
        metadata: {},
      });
      expect(created.body.created_by).toBe(env.tenant.applicationId);
      const read = await env.tenant.client.request<Record<string, unknown>>(
        'GET',
        `/tokens/${String(created.body.id)}`,
      );
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ ...created.body, data });
    }
  });

  it('keeps metadata exactly and normalises containers', async () => {
    const metadata = { 'Customer ID': 'C-42', empty: '', unicode: 'ünï ✓', spaces: '  padded  ' };
    const created = await env.tenant.client.tokens.create({
      data: 'x',
      metadata,
      containers: ['/General/Low/', '/general/low/', '/pci/'],
    });
    expect(created.metadata).toEqual(metadata);
    expect(created.containers).toEqual(['/general/low/', '/pci/']);
  });

  it('takes a caller-chosen id once: the second create is a 409, also after a delete', async () => {
    const id = `customer-${Date.now()}.card:1`;
    expect((await env.tenant.client.request('POST', '/tokens', { body: { id, data: 1 } })).status).toBe(201);
    const again = await env.tenant.client.request<{ status: number }>('POST', '/tokens', {
      body: { id, data: 2 },
    });
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toContain('application/problem+json');
    expect((await env.tenant.client.request('DELETE', `/tokens/${id}`)).status).toBe(204);
    expect((await env.tenant.client.request('GET', `/tokens/${id}`)).status).toBe(404);
    expect((await env.tenant.client.request('DELETE', `/tokens/${id}`)).status).toBe(404);
    expect((await env.tenant.client.request('POST', '/tokens', { body: { id, data: 3 } })).status).toBe(409);
  });

  it('draws an id from an alias expression on the data, then reads the token by it', async () => {
    const client = env.tenant.client;
    const cases = [
      ['social_security_number', '536-22-8431', '{{ data | alias_preserve_format }}', /^\d{3}-\d{2}-\d{4}$/],
      ['token', 'jane.doe@example.com', '{{ data | alias_preserve_length }}', /^[A-Za-z0-9]{20}$/],
      ['card', card, '{{ data.number | alias_card }}', /^424242\d{6}4242$/],
    ] as const;
    for (const [type, data, id, format] of cases) {
      const created = await client.request<{ id: string }>('POST', '/tokens', { body: { type, data, id } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.id).toMatch(format);
      const read = await client.request<{ id: string; data: unknown }>('GET', `/tokens/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: created.body.id, data });
    }
    // In a bulk call too, each request its own draw.
    const bulk = await client.request<{ a: { id: string }; b: { id: string } }>('POST', '/tokenize', {
      body: {
        a: { type: 'token', data: 'AB-12', id: '{{ data | alias_preserve_format }}' },
        b: { type: 'token', data: 'AB-12', id: '{{ data | alias_preserve_format }}' },
      },
    });
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(200);
    expect(bulk.body.a.id).toMatch(/^[A-Z]{2}-\d{2}$/);
    expect(bulk.body.b.id).toMatch(/^[A-Z]{2}-\d{2}$/);
    expect(bulk.body.a.id).not.toBe(bulk.body.b.id);
  });

  it('refuses any other expression as an id, and an alias that cannot be a token id, naming body.id', async () => {
    for (const [id, data] of [
      ['{{ data | last4 }}', '4242424242424242'],
      ['{{ data | alias_preserve_format | upcase }}', 'abc'],
      ['{{ data | alias_card }}', 'not a card'],
      ['{{ data | alias_preserve_format }}', 'has spaces'],
      ['{ data }', 'secret-value'],
    ] as const) {
      const refused = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
        'POST',
        '/tokens',
        {
          body: { id, data },
        },
      );
      expect(refused.status, id).toBe(400);
      expect(Object.keys(refused.body.errors)).toEqual(['body.id']);
      expect(JSON.stringify(refused.body)).not.toContain(data);
    }
  });

  it('deduplicates on request: same data gives the same token, other data a new one', async () => {
    const card = { number: '5555555555554444', expiration_month: 1, expiration_year: 2031, cvc: '123' };
    const first = await env.tenant.client.request<{ id: string; fingerprint: string }>('POST', '/tokens', {
      body: { type: 'card', data: card, deduplicate_token: true },
    });
    const second = await env.tenant.client.request<{ id: string; fingerprint: string }>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { cvc: '123', expiration_year: 2031, expiration_month: 1, number: card.number },
        deduplicate_token: true,
      },
    });
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    // Another card (a card's fingerprint is of its number: another CVC alone is the same card,
    // token-types.e2e.spec.ts).
    const other = await env.tenant.client.request<{ id: string; fingerprint: string }>('POST', '/tokens', {
      body: { type: 'card', data: { ...card, number: '4000056655665556' }, deduplicate_token: true },
    });
    expect(other.status).toBe(201);
    expect(other.body.fingerprint).not.toBe(first.body.fingerprint);
    const notAsked = await env.tenant.client.request<{ id: string; fingerprint: string }>('POST', '/tokens', {
      body: { type: 'card', data: card },
    });
    expect(notAsked.status).toBe(201);
    expect(notAsked.body.id).not.toBe(first.body.id);
    expect(notAsked.body.fingerprint).toBe(first.body.fingerprint);
  });

  it('fingerprints with a per-tenant key: equal data in two tenants is unrelated', async () => {
    const other = await env.stack.createTenant();
    const mine = await env.tenant.client.tokens.create({ type: 'bank', data: bank });
    const theirs = await other.client.tokens.create({ type: 'bank', data: bank });
    expect(mine.fingerprint).not.toBe(theirs.fingerprint);
  });

  it('treats an expired token as gone', async () => {
    const created = await env.tenant.client.tokens.create({
      data: 'soon gone',
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    expect((await env.tenant.client.request('GET', `/tokens/${created.id}`)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    expect((await env.tenant.client.request('GET', `/tokens/${created.id}`)).status).toBe(404);
  });

  it('validates card and bank data by field', async () => {
    const badCard = await env.tenant.client.request<{ errors: Record<string, string[]> }>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number: '4242424242424241', expiration_month: 13, expiration_year: 2030, cvc: '12' },
      },
    });
    expect(badCard.status).toBe(400);
    expect(Object.keys(badCard.body.errors).sort()).toEqual([
      'body.data.cvc',
      'body.data.expiration_month',
      'body.data.number',
    ]);
    const badBank = await env.tenant.client.request<{ errors: Record<string, string[]> }>('POST', '/tokens', {
      body: { type: 'bank', data: { routing_number: '011000016', account_number: '12' } },
    });
    expect(badBank.status).toBe(400);
    expect(Object.keys(badBank.body.errors).sort()).toEqual([
      'body.data.account_number',
      'body.data.routing_number',
    ]);
  });
});

describe('container-scoped permissions', () => {
  const env = useStack();

  it('a key with rules on /pci/ only reads, creates and deletes only there', async () => {
    const pciOnly = await env.tenant.client.applications.create({
      name: 'pci only',
      type: 'private',
      rules: [{ container: '/pci/', permissions: ['token:create', 'token:read', 'token:delete'] }],
    });
    const scoped = env.tenant.client.withKey(pciOnly.key);
    const general = await env.tenant.client.tokens.create({ data: 'general' });
    const pci = await env.tenant.client.tokens.create({ type: 'card', data: card });

    expect((await scoped.request('GET', `/tokens/${pci.id}`)).status).toBe(200);
    expect((await scoped.request('GET', `/tokens/${general.id}`)).status).toBe(403);
    expect((await scoped.request('POST', '/tokens', { body: { type: 'card', data: card } })).status).toBe(
      201,
    );
    expect((await scoped.request('POST', '/tokens', { body: { data: 'x' } })).status).toBe(403);
    expect(
      (
        await scoped.request('POST', '/tokens', {
          body: { data: 'x', containers: ['/pci/low/', '/general/'] },
        })
      ).status,
    ).toBe(403);
    expect((await scoped.request('DELETE', `/tokens/${general.id}`)).status).toBe(403);
    expect((await scoped.request('DELETE', `/tokens/${pci.id}`)).status).toBe(204);
    // The refused delete left the token in place.
    expect((await env.tenant.client.request('GET', `/tokens/${general.id}`)).status).toBe(200);
  });

  it('a key without a token permission anywhere is refused before any lookup', async () => {
    const noTokens = await env.tenant.client.applications.create({
      name: 'apps only',
      type: 'management',
      permissions: ['application:read'],
    });
    const client = env.tenant.client.withKey(noTokens.key);
    expect((await client.request('GET', '/tokens/anything')).status).toBe(403);
    expect((await client.request('POST', '/tokens', { body: { data: 1 } })).status).toBe(403);
    expect((await client.request('DELETE', '/tokens/anything')).status).toBe(403);
  });
});

describe('deduplication respects containers and access', () => {
  const env = useStack();

  it('deduplicates only to a token in the same containers that the key may read; an explicit id is never swapped', async () => {
    const data = { ssn: '123-45-6789' };
    const general = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data, deduplicate_token: true },
    });
    const elsewhere = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data, containers: ['/hr/'], deduplicate_token: true },
    });
    expect([general.status, elsewhere.status]).toEqual([201, 201]);
    expect(elsewhere.body.id).not.toBe(general.body.id);
    const again = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data, deduplicate_token: true },
    });
    expect([again.status, again.body.id]).toEqual([200, general.body.id]);

    const writeOnly = env.tenant.client.withKey(
      (
        await env.tenant.client.applications.create({
          name: 'writer',
          type: 'public',
          permissions: ['token:create'],
        })
      ).key,
    );
    const fromWriter = await writeOnly.request<{ id: string }>('POST', '/tokens', {
      body: { data, deduplicate_token: true },
    });
    expect(fromWriter.status).toBe(201);
    expect(fromWriter.body.id).not.toBe(general.body.id);

    const named = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { id: 'explicit-ssn', data, deduplicate_token: true },
    });
    expect([named.status, named.body.id]).toEqual([201, 'explicit-ssn']);
  });

  it('five identical deduplicating creates at the same moment make one token', async () => {
    const data = { iban: `DE${Date.now()}` };
    const responses = await Promise.all(
      Array.from({ length: 5 }, () =>
        env.tenant.client.request<{ id: string }>('POST', '/tokens', {
          body: { data, deduplicate_token: true },
        }),
      ),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([200, 200, 200, 200, 201]);
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
  });

  it('an expired token is a 404 for deletes too', async () => {
    const created = await env.tenant.client.tokens.create({
      data: 'brief',
      expires_at: new Date(Date.now() + 500).toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await env.tenant.client.request('DELETE', `/tokens/${created.id}`)).status).toBe(404);
  });
});

describe('token expiry on the one clock', () => {
  const clock = new TestClock();
  let stack: TestStack;
  let tenant: TestTenant;
  beforeAll(async () => {
    stack = await startStack({ LOG_LEVEL: 'warn' }, { clock });
    tenant = await stack.createTenant();
  });
  afterAll(async () => stack?.stop());

  it('a token whose expiry the clock has passed is gone for reads, lists, children, updates and deduplication', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const parent = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data: 'parent' },
    });
    const expiring = await tenant.client.request<{ id: string }>(
      'POST',
      `/tokens/${parent.body.id}/children`,
      {
        body: { data: 'soon gone', expires_at: inAnHour },
      },
    );
    expect((await tenant.client.request('GET', `/tokens/${expiring.body.id}`)).status).toBe(200);

    clock.advance(2 * 3_600_000);
    expect((await tenant.client.request('GET', `/tokens/${expiring.body.id}`)).status).toBe(404);
    const list = await tenant.client.request<{ data: { id: string }[] }>('GET', '/tokens');
    expect(list.body.data.map((token) => token.id)).toEqual([parent.body.id]);
    const children = await tenant.client.request<{ data: unknown[] }>(
      'GET',
      `/tokens/${parent.body.id}/children`,
    );
    expect(children.body.data).toEqual([]);
    expect(
      (
        await tenant.client.request('PATCH', `/tokens/${expiring.body.id}`, {
          body: { metadata: { a: 'b' } },
        })
      ).status,
    ).toBe(404);
    const again = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data: 'soon gone', deduplicate_token: true },
    });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(expiring.body.id);
  });

  it('an expired token’s claim on its data passes to the next deduplicated create, once', async () => {
    const body = { data: { claimed: 'then expired' }, deduplicate_token: true };
    const first = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { ...body, expires_at: new Date(clock.now().getTime() + 3_600_000).toISOString() },
    });
    expect(first.status).toBe(201);
    clock.advance(2 * 3_600_000);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => tenant.client.request<{ id: string }>('POST', '/tokens', { body })),
    );
    const ids = new Set(answers.map((answer) => answer.body.id));
    expect(ids.size).toBe(1);
    expect(ids.has(first.body.id)).toBe(false);
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
  });
});
