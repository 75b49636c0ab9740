// A card's CVC may be kept only until authorisation: the service removes it CARD_CVC_TTL_SECONDS
// after it was given. The attacker is whoever holds the tenant's key (or one of its reactors)
// after that time, or an operator reading the database and Redis with the master key: each
// prepares, while the CVC is still there, every way it might come back later (a reactor answer
// under an Idempotency-Key, an async reactor result, a child listing), then tries every read
// path once it is due. None may give it back, and nothing stored may still open to it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { openMasterKeyring, Vault } from '@tokenvault/vault';
import { tokenStream } from '@tokenvault/tokens';
import { uniqueCardNumber } from '../support/cards.ts';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { createReactor, echoArgs } from '../support/reactors.ts';
import { everyRedisValue } from '../support/redis.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: Record<string, unknown>;
}
interface Answer {
  raw?: { cvc?: unknown; data?: Record<string, unknown> };
  result?: { raw?: { cvc?: unknown } };
  type?: string;
  async_reactor_request_id?: string;
}

describe('attack: a card’s CVC after its retention time', () => {
  const env = useStack({ CARD_CVC_TTL_SECONDS: '3', PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let destination: TestDestination;
  const cvc = String(100 + Math.floor(Math.random() * 900));
  const number = uniqueCardNumber();
  const marker = `cvc-attack-${randomBytes(4).toString('hex')}`;
  let cardId: string;
  let parentId: string;
  let echoReactor: string;
  let svcReactor: string;
  const idempotencyKey = `charge-${randomBytes(8).toString('hex')}`;
  let asyncResultPath: string;
  const cvcArgs = () => ({ cvc: `{{ ${cardId} | json: '$.cvc' }}` });

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    const client = env.tenant.client;
    const created = await client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 9, expiration_year: 2031, cvc },
        metadata: { marker },
      },
    });
    expect(created.status).toBe(201);
    cardId = created.body.id;
    parentId = (await client.tokens.create({ data: 'parent', metadata: { marker: `${marker}-parent` } })).id;
    expect((await client.request('POST', `/tokens/${parentId}/children/${cardId}`)).status).toBeLessThan(300);

    // While the CVC is there: a reactor answers it under an Idempotency-Key, and an async run keeps
    // an answer holding it.
    echoReactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'cvc', type: 'string', optional: true }],
    });
    const first = await client.request<Answer>('POST', `/reactors/${echoReactor}/react`, {
      body: { args: cvcArgs() },
      headers: { 'idempotency-key': idempotencyKey },
    });
    expect(first.body.raw?.cvc).toBe(cvc);
    const queued = await client.request<Answer>('POST', `/reactors/${echoReactor}/react-async`, {
      body: { args: cvcArgs() },
    });
    asyncResultPath = `/reactors/${echoReactor}/results/${queued.body.async_reactor_request_id}`;
    await eventually(async () => {
      const result = await client.request<Answer>('GET', asyncResultPath);
      expect(result.body.result?.raw?.cvc).toBe(cvc);
    });
    // A reactor that reads the card through its application's key (the svc client).
    const reader = await client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    svcReactor = await createReactor(
      env.tenant,
      {
        code: `module.exports = async function (req) {
          const token = await req.svc.tokens.retrieve(req.args.id);
          return { raw: { data: token.data } };
        };`,
        request_parameters: [{ name: 'id', type: 'string' }],
      },
      { applicationId: reader.id },
    );
    expect((await client.request<Token>('GET', `/tokens/${cardId}`)).body.data?.cvc).toBe(cvc);

    // Its time comes.
    await eventually(async () => {
      const read = await client.request<Token>('GET', `/tokens/${cardId}`);
      expect(read.body.data).not.toHaveProperty('cvc');
    }, 20_000);
  });
  afterAll(async () => destination?.close());

  /** No `cvc` anywhere in this answer (the number and the rest of the card stay). */
  const withoutCvc = (body: unknown) => {
    expect(JSON.stringify(body)).not.toContain('"cvc"');
  };

  it('GET /tokens/{id}, the lists and the child list answer the card without its CVC', async () => {
    const client = env.tenant.client;
    const read = await client.request<Token>('GET', `/tokens/${cardId}`);
    expect(read.body.data).toEqual({ number, expiration_month: 9, expiration_year: 2031 });
    withoutCvc(read.body);
    const listed = await client.request<{ data: Token[] }>('GET', '/tokens', {
      query: { 'metadata.marker': marker },
    });
    expect(listed.body.data.map((token) => token.id)).toEqual([cardId]);
    withoutCvc(listed.body);
    const v2 = await client.request<{ data: Token[] }>('GET', '/v2/tokens', {
      query: { metadata: JSON.stringify({ marker }) },
    });
    expect(v2.body.data.map((token) => token.id)).toEqual([cardId]);
    withoutCvc(v2.body);
    const children = await client.request<{ data: Token[] }>('GET', `/tokens/${parentId}/children`);
    expect(children.body.data.map((token) => token.id)).toEqual([cardId]);
    withoutCvc(children.body);
  });

  it('a reactor’s expression and its svc client find no CVC', async () => {
    const client = env.tenant.client;
    const echoed = await client.request<Answer>('POST', `/reactors/${echoReactor}/react`, {
      body: { args: cvcArgs() },
    });
    expect(echoed.body.raw?.cvc).not.toBe(cvc);
    const viaSvc = await client.request<Answer>('POST', `/reactors/${svcReactor}/react`, {
      body: { args: { id: cardId } },
    });
    expect(viaSvc.status).toBe(200);
    expect(viaSvc.body.raw?.data).toEqual({ number, expiration_month: 9, expiration_year: 2031 });
  });

  it('a proxy expression sends no CVC to the destination', async () => {
    destination.received.length = 0;
    const response = await fetch(`${env.stack.url}/proxy/charges`, {
      method: 'POST',
      headers: {
        'svc-api-key': env.tenant.apiKey,
        'svc-proxy-url': destination.url,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        cvc: `{{ ${cardId} | json: '$.cvc' }}`,
        number: `{{ ${cardId} | json: '$.number' }}`,
      }),
    });
    expect(response.status).toBeLessThan(500);
    const sent = destination.received.map((request) => request.body.toString('utf8'));
    expect(sent).toHaveLength(1);
    for (const body of sent) {
      const parsed = JSON.parse(body) as { cvc?: unknown; number?: unknown };
      expect(parsed.number).toBe(number);
      expect(parsed.cvc).not.toBe(cvc);
    }
  });

  it('the reactor answer kept under its Idempotency-Key, and the async result, do not give it back', async () => {
    const client = env.tenant.client;
    const replayed = await client.request<Answer>('POST', `/reactors/${echoReactor}/react`, {
      body: { args: cvcArgs() },
      headers: { 'idempotency-key': idempotencyKey },
    });
    expect(replayed.body.raw).toBeUndefined();
    expect(replayed.status).toBe(409);
    const result = await client.request<Answer>('GET', asyncResultPath);
    expect(result.body.result).toBeUndefined();
    expect(result.status).toBe(404);
  });

  it('nothing stored opens to it: the events’ earlier ciphertexts are under a destroyed key, the rest holds no CVC', async () => {
    const { ownerPool } = env.stack.service.runtime;
    // An operator's vault: the master keyring, nothing in memory.
    const vault = new Vault(ownerPool, openMasterKeyring(env.stack.config));
    const events = await ownerPool.query<{ event_type: string; data: { data_ciphertext?: string } }>(
      'SELECT event_type, data FROM es_events WHERE stream_id = $1 ORDER BY global_position',
      [tokenStream(env.tenant.tenantId, cardId)],
    );
    const sealed = events.rows.filter((row) => row.data.data_ciphertext);
    expect(sealed.map((row) => row.event_type)).toEqual(['TokenCreated', 'TokenCvcRemoved']);
    await expect(
      vault.decrypt(env.tenant.tenantId, cardId, sealed[0]!.data.data_ciphertext!),
    ).rejects.toThrow();
    const opened = await vault.decrypt(env.tenant.tenantId, cardId, sealed[1]!.data.data_ciphertext!);
    expect(opened).toEqual({ number, expiration_month: 9, expiration_year: 2031 });
    const row = await ownerPool.query<{ data_ciphertext: string }>(
      'SELECT data_ciphertext FROM tokens WHERE tenant_id = $1 AND id = $2',
      [env.tenant.tenantId, cardId],
    );
    expect(await vault.decrypt(env.tenant.tenantId, cardId, row.rows[0]!.data_ciphertext)).not.toHaveProperty(
      'cvc',
    );
    // No token event and no Redis value holds it in the open (a reactor's formula names its
    // `cvc` parameter, which is no CVC).
    const everyEvent = await ownerPool.query<{ data: unknown }>(
      "SELECT data FROM es_events WHERE stream_id LIKE 'tokens.%'",
    );
    for (const event of everyEvent.rows) expect(JSON.stringify(event.data)).not.toContain('"cvc"');
    const redis = await everyRedisValue(env.stack.config.REDIS_URL, `${env.stack.config.QUEUE_PREFIX}:*`);
    for (const value of redis) expect(value).not.toContain('"cvc"');
  });
});
