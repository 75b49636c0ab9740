// A card's CVC may be kept only CARD_CVC_TTL_SECONDS after it was given. A card form collects a
// card with its CVC into a token intent (a public key, in a browser); the intent lives up to 24
// hours. The attacker is whoever converts the intent, or reads the token made of it, after the
// CVC's time: a backend key converting a stale intent hoping for the CVC, or a conversion made
// just before the time, hoping the token's own clock for the CVC starts again at the conversion.
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { tokenStream } from '@tokenvault/tokens';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Intent {
  id: string;
  created_at: string;
  expires_at: string;
}
interface Token {
  id: string;
  data?: Record<string, unknown>;
}

const ttlSeconds = 3;

describe('attack: a card intent’s CVC past its retention time', () => {
  const env = useStack({ CARD_CVC_TTL_SECONDS: String(ttlSeconds) });
  let publicKey: string;

  beforeAll(async () => {
    const application = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Card form', type: 'public', permissions: ['token:create', 'token-intent:create'] },
    });
    expect(application.status).toBe(201);
    publicKey = application.body.key;
  });

  const createIntent = async (cvc: string) => {
    const created = await env.tenant.client.request<Intent>('POST', '/token-intents', {
      body: {
        type: 'card',
        data: { number: uniqueCardNumber(), expiration_month: 10, expiration_year: 2041, cvc },
      },
      apiKey: publicKey,
    });
    expect(created.status).toBe(201);
    return created.body;
  };

  it('an intent converted after the CVC’s time gives no CVC: the intent is gone, or its token holds none', async () => {
    const cvc = '741';
    const intent = await createIntent(cvc);
    await sleep(ttlSeconds * 1000 + 500);
    const converted = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { token_intent_id: intent.id },
    });
    if (converted.status === 201) {
      const read = await env.tenant.client.request<Token>('GET', `/tokens/${converted.body.id}`);
      expect(read.body.data).toBeDefined();
      expect(read.body.data).not.toHaveProperty('cvc');
    } else {
      expect(converted.status).toBe(404);
    }
    expect(JSON.stringify(converted.body)).not.toContain(cvc);
    expect((await env.tenant.client.request('GET', `/token-intents/${intent.id}`)).status).toBe(404);
  });

  it('a token made of an intent loses the CVC at the intent’s time, not CARD_CVC_TTL_SECONDS after the conversion', async () => {
    const intent = await createIntent('852');
    await sleep(1_000);
    const converted = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { token_intent_id: intent.id },
    });
    expect(converted.status).toBe(201);
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${converted.body.id}`);
    expect(read.body.data).toHaveProperty('cvc', '852');
    const events = await env.stack.service.runtime.ownerPool.query<{ data: { cvc_expires_at?: string } }>(
      `SELECT data FROM es_events WHERE stream_id = $1 AND event_type = 'TokenCreated'`,
      [tokenStream(env.tenant.tenantId, converted.body.id)],
    );
    const cvcExpiresAt = events.rows[0]?.data.cvc_expires_at;
    expect(cvcExpiresAt).toBeDefined();
    expect(Date.parse(cvcExpiresAt!)).toBeLessThanOrEqual(Date.parse(intent.created_at) + ttlSeconds * 1000);
  });
});
