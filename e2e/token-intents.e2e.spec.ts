import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import type { TokenvaultClient } from '@tokenvault/sdk';
import { uniqueCardNumber } from './support/cards.ts';
import { TestClock } from './support/clock.ts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';

interface Intent {
  id: string;
  type: string;
  expires_at: string;
  card?: { bin: string; last4: string };
  [field: string]: unknown;
}
interface Log {
  entity_id: string;
  operation: string;
  message: string;
}

/** Token intents over HTTP, on the stack's one clock (the expiry sweep's too). */
describe('token intents: created with a public key, read without data, made a token once, deleted or expired and shredded', () => {
  const clock = new TestClock();
  let stack: TestStack;
  let tenant: TestTenant;
  let browser: TokenvaultClient;
  beforeAll(async () => {
    stack = await startStack({ TOKEN_INTENT_SWEEP_INTERVAL_MS: '200' }, { clock });
    tenant = await stack.createTenant();
    const publicApplication = await tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Card form', type: 'public', permissions: ['token:create', 'token-intent:create'] },
    });
    expect(publicApplication.status).toBe(201);
    browser = tenant.client.withKey(publicApplication.body.key);
  });
  afterAll(async () => stack?.stop());

  const card = () => ({
    number: uniqueCardNumber(),
    expiration_month: 11,
    expiration_year: 2040,
    cvc: '321',
  });
  const createIntent = async (data: Omit<ReturnType<typeof card>, 'cvc'> & { cvc?: string } = card()) => {
    const created = await browser.request<Intent>('POST', '/token-intents', { body: { type: 'card', data } });
    expect(created.status).toBe(201);
    return { intent: created.body, data };
  };
  /** The intent's key row (token_keys, named after the intent): gone once it is shredded. */
  const keyRows = async (intentId: string) =>
    (
      await stack.service.runtime.ownerPool.query(
        'SELECT 1 FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
        [tenant.tenantId, `token-intent/${intentId}`],
      )
    ).rowCount;
  const logsOf = async (intentId: string) =>
    (await tenant.client.request<{ data: Log[] }>('GET', '/logs', { query: { entity_id: intentId } })).body
      .data;

  it('creates and reads an intent without its data; a bad card is a 400 naming the field', async () => {
    const { intent, data } = await createIntent();
    expect(intent).toMatchObject({ type: 'card', card: { last4: data.number.slice(-4) } });
    // It holds a CVC: it lives as long as the CVC may be kept (CARD_CVC_TTL_SECONDS, an hour by
    // default); without one, 24 hours.
    expect(Date.parse(intent.expires_at) - Date.parse(String(intent.created_at))).toBe(3600_000);
    const { cvc: _cvc, ...withoutCvc } = card();
    const plain = await createIntent(withoutCvc);
    expect(Date.parse(plain.intent.expires_at) - Date.parse(String(plain.intent.created_at))).toBe(
      24 * 3600_000,
    );
    expect(JSON.stringify(intent)).not.toContain(data.number);
    const read = await tenant.client.request<Intent>('GET', `/token-intents/${intent.id}`);
    expect(read.status).toBe(200);
    // A read shows the first six and the last four, no fingerprint (they would answer a guess).
    const { fingerprint: _fingerprint, ...withoutFingerprint } = intent as Intent & { fingerprint?: string };
    expect(read.body).toEqual({
      ...withoutFingerprint,
      card: { ...intent.card, bin: data.number.slice(0, 6) },
    });
    expect(await keyRows(intent.id)).toBe(1);
    const bad = await browser.request<{ errors: Record<string, string[]> }>('POST', '/token-intents', {
      body: { type: 'card', data: { ...data, expiration_month: 13 } },
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors)).toEqual(['body.data.expiration_month']);
  });

  it('POST /tokens { token_intent_id } makes a token of its data once, and shreds the intent’s key', async () => {
    const { intent, data } = await createIntent();
    const made = await tenant.client.request<{ id: string; type: string }>('POST', '/tokens', {
      body: { token_intent_id: intent.id, metadata: { customer: 'c-42' } },
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ type: 'card', metadata: { customer: 'c-42' } });
    const token = await tenant.client.request<{ data: unknown }>('GET', `/tokens/${made.body.id}`);
    expect(token.body.data).toEqual(data);
    expect(await keyRows(intent.id)).toBe(0);
    expect((await tenant.client.request('GET', `/token-intents/${intent.id}`)).status).toBe(404);
    const again = await tenant.client.request('POST', '/tokens', { body: { token_intent_id: intent.id } });
    expect(again.status).toBe(409);
    await eventually(async () => {
      expect((await logsOf(intent.id)).map((log) => [log.operation, log.message])).toEqual(
        expect.arrayContaining([
          ['create', 'Token intent created'],
          ['delete', `Token intent made token ${made.body.id} (its key destroyed)`],
        ]),
      );
    }, 30_000);
  });

  it('DELETE shreds the key; the intent is gone for reads and conversions', async () => {
    const { intent } = await createIntent();
    expect((await tenant.client.request('DELETE', `/token-intents/${intent.id}`)).status).toBe(204);
    expect(await keyRows(intent.id)).toBe(0);
    expect((await tenant.client.request('GET', `/token-intents/${intent.id}`)).status).toBe(404);
    const convert = await tenant.client.request('POST', '/tokens', { body: { token_intent_id: intent.id } });
    expect(convert.status).toBe(404);
  });

  it('past 24 hours the sweep expires the intent and shreds its key; a conversion is refused', async () => {
    const { intent } = await createIntent();
    const another = await createIntent();
    clock.advance(24 * 3600_000 + 60_000);
    // Not swept yet or swept: an expired intent is gone either way.
    expect((await tenant.client.request('GET', `/token-intents/${intent.id}`)).status).toBe(404);
    expect(
      (await tenant.client.request('POST', '/tokens', { body: { token_intent_id: intent.id } })).status,
    ).toBe(404);
    // The sweep expires each intent in an append of its own: both go, in either order.
    await eventually(async () => {
      expect(await keyRows(intent.id)).toBe(0);
      expect(await keyRows(another.intent.id)).toBe(0);
      expect((await logsOf(intent.id)).map((log) => log.message)).toContain(
        'Token intent expired (its key destroyed)',
      );
    }, 20_000);
    const expired = await stack.service.runtime.ownerPool.query(
      `SELECT count(*)::int AS count FROM es_events WHERE stream_id = $1 AND event_type = 'TokenIntentExpired'`,
      [`tokens.intent-${tenant.tenantId}-${intent.id}`],
    );
    expect(expired.rows[0]).toEqual({ count: 1 });
  });
});
