// A token write's answer carries the token's card or bank summary and its fingerprint as the
// caller's read decision showed them when it ran (reveal: the BIN of 8 digits and the
// fingerprint). The attacker holds a key of an application whose rule was narrowed since (to mask,
// or to create only), or whose token was deleted since, or a new key of the same application: it
// replays an earlier write (PATCH /tokens/{id}, even metadata-only; POST /tokens; POST
// /tokens/{id}/children; POST /token-intents; POST /tokenize) under its Idempotency-Key and reads
// the kept answer. No replay may show more of the card than the current decision shows, nor the
// fingerprint (an equality test of guessed data); a plain create retried still gets its token's
// id and status (SDK retries).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack, type TestTenant } from '../support/stack.ts';

interface Token {
  id: string;
  card?: { bin?: string; last4?: string };
  bank?: unknown;
  fingerprint?: string;
  type?: string;
  detail?: string;
}

const pci = (permissions: string[], transform: 'reveal' | 'mask') => [
  { description: 'cards', priority: 1, container: '/pci/', transform, permissions },
];

describe('attack: an idempotent replay answers a token’s summaries and fingerprint its key may no longer see', () => {
  const env = useStack();
  const idempotencyKey = () => `replay-${randomBytes(8).toString('hex')}`;

  /** An application with one rule on /pci/, and its key. */
  const applicationWith = async (tenant: TestTenant, permissions: string[], transform: 'reveal' | 'mask') => {
    const created = await tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: {
        name: `replayer-${randomBytes(3).toString('hex')}`,
        type: 'private',
        rules: pci(permissions, transform),
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const narrow = async (
    tenant: TestTenant,
    id: string,
    permissions: string[],
    transform: 'reveal' | 'mask',
  ) => {
    const name = `narrowed-${randomBytes(3).toString('hex')}`;
    const put = await tenant.client.request('PUT', `/applications/${id}`, {
      body: { name, rules: pci(permissions, transform) },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  };
  const newKeyOf = async (tenant: TestTenant, applicationId: string) => {
    const created = await tenant.client.request<{ key: string }>(
      'POST',
      `/applications/${applicationId}/keys`,
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };
  const send = (
    tenant: TestTenant,
    method: string,
    path: string,
    body: unknown,
    apiKey: string,
    key: string,
  ) => tenant.client.request<Token>(method, path, { body, apiKey, headers: { 'idempotency-key': key } });

  /** Nothing past the first six digits of the number, and no fingerprint, anywhere in the answer. */
  const showsNoMoreThanMasked = (what: string, body: unknown, number: string) => {
    const text = JSON.stringify(body);
    expect(text, what).not.toContain(number.slice(0, 7));
    expect(text, what).not.toContain('"fingerprint"');
  };

  it('a metadata-only update replayed by a new key after the rule narrowed to mask and the token’s deletion', async () => {
    const tenant = env.tenant;
    const app = await applicationWith(tenant, ['token:create', 'token:read', 'token:update'], 'reveal');
    const number = uniqueCardNumber();
    const card = await tenant.client.tokens.create({
      type: 'card',
      data: { number, expiration_month: 4, expiration_year: 2031 },
      containers: ['/pci/'],
    });
    const key = idempotencyKey();
    const body = { metadata: { n: '1' } };
    const first = await send(tenant, 'PATCH', `/tokens/${card.id}`, body, app.key, key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // What reveal showed when it ran: the BIN of 8 digits and the fingerprint.
    expect(first.body.card?.bin).toBe(number.slice(0, 8));
    expect(first.body.fingerprint).toBeDefined();

    await narrow(tenant, app.id, ['token:read', 'token:update'], 'mask');
    const narrowed = await send(tenant, 'PATCH', `/tokens/${card.id}`, body, app.key, key);
    showsNoMoreThanMasked('replay after narrowing to mask', narrowed.body, number);

    expect((await tenant.client.request('DELETE', `/tokens/${card.id}`)).status).toBe(204);
    const secondKey = await newKeyOf(tenant, app.id);
    const replayed = await send(tenant, 'PATCH', `/tokens/${card.id}`, body, secondKey, key);
    expect(replayed.body.card).toBeUndefined();
    expect(replayed.body.fingerprint).toBeUndefined();
    expect(JSON.stringify(replayed.body)).not.toContain(number.slice(-4));
  });

  it('a create and a child’s create replayed after the rule narrowed and the token’s deletion', async () => {
    const tenant = env.tenant;
    const permissions = ['token:create', 'token:read', 'token:update'];
    const app = await applicationWith(tenant, permissions, 'reveal');
    const parent = await tenant.client.tokens.create({ data: 'parent', containers: ['/pci/'] });
    const numbers = [uniqueCardNumber(), uniqueCardNumber()];
    const writes = [
      { method: 'POST', path: '/tokens' },
      { method: 'POST', path: `/tokens/${parent.id}/children` },
    ].map((write, index) => ({
      ...write,
      key: idempotencyKey(),
      number: numbers[index]!,
      body: {
        type: 'card',
        data: { number: numbers[index], expiration_month: 4, expiration_year: 2031 },
        containers: ['/pci/'],
      },
    }));
    const firsts = [];
    for (const write of writes) {
      const first = await send(tenant, write.method, write.path, write.body, app.key, write.key);
      expect(first.status, `${write.path}: ${JSON.stringify(first.body)}`).toBe(201);
      expect(first.body.card?.bin, write.path).toBe(write.number.slice(0, 8));
      expect(first.body.fingerprint, write.path).toBeDefined();
      firsts.push(first);
    }

    await narrow(tenant, app.id, ['token:create', 'token:read'], 'mask');
    for (const first of firsts) {
      expect((await tenant.client.request('DELETE', `/tokens/${first.body.id}`)).status).toBe(204);
    }
    const secondKey = await newKeyOf(tenant, app.id);
    for (const [index, write] of writes.entries()) {
      for (const [who, apiKey] of [
        ['the same key', app.key],
        ['a new key', secondKey],
      ] as const) {
        const replayed = await send(tenant, write.method, write.path, write.body, apiKey, write.key);
        showsNoMoreThanMasked(`${write.path} replayed by ${who}`, replayed.body, write.number);
        // Still the first answer's id and status: a retry does not create again.
        expect(replayed.status, `${write.path} replayed by ${who}`).toBe(201);
        expect(replayed.body.id).toBe(firsts[index]!.body.id);
        expect(replayed.headers.get('idempotency-replayed')).toBe('true');
      }
    }
  });

  it('a token intent’s create replayed by a new key of its application', async () => {
    const tenant = env.tenant;
    const created = await tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'checkout', type: 'private', permissions: ['token-intent:create'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const number = uniqueCardNumber();
    const key = idempotencyKey();
    const body = { type: 'card', data: { number, expiration_month: 4, expiration_year: 2031 } };
    const first = await send(tenant, 'POST', '/token-intents', body, created.body.key, key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.fingerprint).toBeDefined();
    const secondKey = await newKeyOf(tenant, created.body.id);
    const replayed = await send(tenant, 'POST', '/token-intents', body, secondKey, key);
    showsNoMoreThanMasked('intent replayed by a new key', replayed.body, number);
    expect(replayed.status).toBe(201);
    expect(replayed.body.id).toBe(first.body.id);
  });

  it('POST /tokenize replayed after the rule narrowed to create only', async () => {
    const tenant = env.tenant;
    const app = await applicationWith(tenant, ['token:create', 'token:read'], 'reveal');
    const number = uniqueCardNumber();
    const key = idempotencyKey();
    const body = {
      order: 7,
      payment: {
        type: 'card',
        data: { number, expiration_month: 4, expiration_year: 2031 },
        containers: ['/pci/'],
      },
    };
    const first = await tenant.client.request<{ payment: Token }>('POST', '/tokenize', {
      body,
      apiKey: app.key,
      headers: { 'idempotency-key': key },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.payment.card?.bin).toBe(number.slice(0, 8));

    await narrow(tenant, app.id, ['token:create'], 'reveal');
    const replayed = await tenant.client.request<{ payment: Token; order: number }>('POST', '/tokenize', {
      body,
      apiKey: app.key,
      headers: { 'idempotency-key': key },
    });
    showsNoMoreThanMasked('tokenize replayed', replayed.body, number);
    expect(replayed.status).toBe(200);
    expect(replayed.body.payment.id).toBe(first.body.payment.id);
    expect(replayed.body.order).toBe(7);
  });

  it('a plain create retried under its key gets the same token id and status', async () => {
    const key = idempotencyKey();
    const body = {
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 4, expiration_year: 2031 },
    };
    const first = await send(env.tenant, 'POST', '/tokens', body, env.tenant.apiKey, key);
    expect(first.status).toBe(201);
    const retried = await send(env.tenant, 'POST', '/tokens', body, env.tenant.apiKey, key);
    expect(retried.status).toBe(201);
    expect(retried.body.id).toBe(first.body.id);
    expect(retried.headers.get('idempotency-replayed')).toBe('true');
  });
});
