// Token intents from the attacker's side. Another tenant's key names this tenant's intent ids,
// hoping to read, delete or convert one, or at least to learn it exists; a public key (it ships in
// a browser) tries to read an intent back; a conversion is replayed, hoping for a second token of
// one intent; and the card number is looked for wherever it could leak: the database in clear,
// the messages on Kafka, the service's logs.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';
import {
  collect,
  testBrokers,
  uniquePrefix,
  waitForTopics,
  waitUntil,
  type Collected,
} from '../kafka/support.ts';

interface Problem {
  status: number;
  detail?: string;
}

describe('attack: token intents across tenants, from a browser key, replayed, and looked for in clear', () => {
  const brokers = testBrokers();
  const prefix = uniquePrefix('intents');
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let received: Collected;
  let publicKey: string;
  const number = uniqueCardNumber();
  const card = { number, expiration_month: 10, expiration_year: 2041, cvc: '987' };

  beforeAll(async () => {
    stack = await startStack({ KAFKA_BROKERS: brokers, KAFKA_TOPIC_PREFIX: prefix });
    tenant = await stack.createTenant();
    other = await stack.createTenant('Other Corp');
    await waitForTopics(brokers, prefix);
    received = await collect(brokers, prefix);
    const application = await tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Card form', type: 'public', permissions: ['token:create', 'token-intent:create'] },
    });
    expect(application.status).toBe(201);
    publicKey = application.body.key;
  });
  afterAll(async () => {
    await received?.consumer.stop();
    await stack?.stop();
  });

  const createIntent = async () => {
    const created = await tenant.client.request<{ id: string }>('POST', '/token-intents', {
      body: { type: 'card', data: card },
      apiKey: publicKey,
    });
    expect(created.status).toBe(201);
    return created.body.id;
  };

  it('another tenant gets, deletes and converts nothing, and is answered as for an id that never was', async () => {
    const intentId = await createIntent();
    const never = randomUUID();
    for (const [method, path, body] of [
      ['GET', '/token-intents/{id}', undefined],
      ['DELETE', '/token-intents/{id}', undefined],
      ['POST', '/tokens', { token_intent_id: '{id}' }],
    ] as const) {
      const call = (id: string) =>
        other.client.request<Problem>(method, path.replace('{id}', id), {
          ...(body ? { body: { token_intent_id: id } } : {}),
        });
      const [theirs, nobodys] = [await call(intentId), await call(never)];
      expect(theirs.status, `${method} ${path}`).toBe(404);
      const { request_id: _theirs, ...theirsBody } = theirs.body as Problem & { request_id?: string };
      const { request_id: _nobodys, ...nobodysBody } = nobodys.body as Problem & { request_id?: string };
      expect(theirsBody).toEqual(nobodysBody);
    }
    expect((await tenant.client.request('GET', `/token-intents/${intentId}`)).status).toBe(200);
  });

  it('a public key reads no intent (403), and its conversion answers no data', async () => {
    const intentId = await createIntent();
    const read = await tenant.client.request('GET', `/token-intents/${intentId}`, { apiKey: publicKey });
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).not.toContain(number);
    const made = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { token_intent_id: intentId },
      apiKey: publicKey,
    });
    expect(made.status).toBe(201);
    expect(JSON.stringify(made.body)).not.toContain(number);
    expect(
      (await tenant.client.request('GET', `/tokens/${made.body.id}`, { apiKey: publicKey })).status,
    ).toBe(403);
  });

  it('a replayed conversion makes no second token', async () => {
    const intentId = await createIntent();
    const convert = () => tenant.client.request('POST', '/tokens', { body: { token_intent_id: intentId } });
    expect((await convert()).status).toBe(201);
    const replays = await Promise.all([convert(), convert(), convert()]);
    expect(replays.map((replay) => replay.status)).toEqual([409, 409, 409]);
    const converted = await stack.service.runtime.ownerPool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM es_events WHERE stream_id = $1 AND event_type = 'TokenIntentConverted'`,
      [`tokens.intent-${tenant.tenantId}-${intentId}`],
    );
    expect(converted.rows[0]).toEqual({ count: 1 });
  });

  it('the card number is nowhere in clear: not in any table, not on Kafka, not in a log line', async () => {
    const intentId = await createIntent();
    const pool = stack.service.runtime.ownerPool;
    const tables = await pool.query<{ name: string }>(
      `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) AS name
         FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    );
    for (const { name } of tables.rows) {
      const found = await pool.query(`SELECT 1 FROM ${name} t WHERE t::text LIKE $1 LIMIT 1`, [
        `%${number}%`,
      ]);
      expect(found.rowCount, `the number in clear in ${name}`).toBe(0);
    }
    const key = `${tenant.tenantId}/${intentId}`;
    await waitUntil(
      'the intent’s TokenIntentCreated on Kafka',
      () => received.events.some((delivery) => delivery.key === key),
      90_000,
    );
    const created = received.events.find((delivery) => delivery.key === key)!;
    expect(Object.keys(created.event.data as object).sort()).toEqual(
      ['created_at', 'created_by', 'expires_at', 'intent_id', 'tenant_id', 'type'].sort(),
    );
    const everything = received.messages.map((delivery) => `${delivery.key}\n${delivery.raw}`).join('\n');
    expect(everything.includes(number), 'the number on Kafka').toBe(false);
    expect(stack.logs.join('\n').includes(number), 'the number in a log line').toBe(false);
  });
});
