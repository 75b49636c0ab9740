import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudEventSchema, toPublicMessages } from '@tokenvault/contracts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import {
  allEvents,
  collect,
  expectComplete,
  partitionCounts,
  receivedAll,
  testBrokers,
  uniquePrefix,
  waitForTopics,
  waitUntil,
  type Collected,
} from './kafka/support.ts';

// The one-process service with KAFKA_BROKERS set publishes every event to a real broker.
describe('events on Kafka', () => {
  const brokers = testBrokers();
  const prefix = uniquePrefix('events');
  const marker = `MARKER-${Math.random().toString(36).slice(2)}`;
  let stack: TestStack;
  let tenant: TestTenant;
  let received: Collected;

  beforeAll(async () => {
    stack = await startStack({
      KAFKA_BROKERS: brokers,
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_TOPIC_PARTITIONS: '3',
      PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
    });
    tenant = await stack.createTenant();
    await waitForTopics(brokers, prefix);
    received = await collect(brokers, prefix);
  });
  afterAll(async () => {
    await received?.consumer.stop();
    await stack?.stop();
  });

  it('creates one topic per context with the configured partitions', async () => {
    expect(await partitionCounts(brokers, prefix)).toEqual([3, 3, 3, 3, 3, 3]);
  });

  it('delivers the CloudEvents of API operations, in order per entity, with no sensitive data', async () => {
    const api = tenant.client;
    const card = await api.request<{ id: string }>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
        metadata: { note: marker },
      },
    });
    const plain = await api.request<{ id: string }>('POST', '/tokens', {
      body: { id: `tok-${Date.now()}`, data: { secret: marker, nested: [marker] } },
    });
    expect([card.status, plain.status]).toEqual([201, 201]);
    expect((await api.request('GET', `/tokens/${plain.body.id}`)).status).toBe(200);
    expect((await api.request('DELETE', `/tokens/${plain.body.id}`)).status).toBe(204);
    const application = await api.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'Checkout', type: 'private', permissions: ['token:create'] },
    });
    expect(application.status).toBe(201);
    const updated = await api.request('PUT', `/applications/${application.body.id}`, {
      body: { name: 'Checkout v2', permissions: ['token:create', 'token:read'] },
    });
    expect(updated.status).toBe(200);
    expect((await api.request('DELETE', `/applications/${application.body.id}`)).status).toBe(204);
    const proxy = await api.request<{ id: string; key: string }>('POST', '/proxies', {
      body: {
        name: 'Outbound',
        destination_url: `http://127.0.0.1:9/v1?secret=${marker}`,
        configuration: { API_KEY: marker },
        request_transforms: [{ type: 'code', code: `module.exports = async () => ({ body: '${marker}' });` }],
      },
    });
    expect(proxy.status).toBe(201);
    expect((await api.request('DELETE', `/proxies/${proxy.body.id}`)).status).toBe(204);

    const stored = await allEvents(stack.service.runtime.ownerPool);
    await waitUntil('every event on Kafka', () => receivedAll(stored, received.events), 90_000);
    expectComplete(stored, received.events, expect);

    // Every message is a CloudEvent whose id is the event id (or, for a batch of reads, the
    // event id and the read's index) and whose subject is the key.
    const storedById = new Map(
      stored.flatMap((original) =>
        toPublicMessages(original).map((message) => [message.value.id, { original, message }] as const),
      ),
    );
    for (const { event, key, topic } of received.messages) {
      expect(cloudEventSchema.parse(event)).toEqual(event);
      const expected = storedById.get(event.id);
      expect(expected, event.id).toBeDefined();
      expect(event.type).toBe(expected?.message.value.type);
      expect(event.type.startsWith(`tokenvault.${topic.slice(prefix.length + 1)}.`)).toBe(true);
      expect(event.subject).toBe(key);
      expect(event.tenantid).toBe(expected?.message.value.tenantid);
      if (expected?.original.type !== 'TokensReadBatch') {
        expect(event.id).toBe(expected?.original.event_id);
        expect(event.tenantid).toBe(expected?.original.metadata.tenant_id);
      }
    }

    const t = tenant.tenantId;
    const typesOf = (key: string) =>
      received.events.filter((delivery) => delivery.key === key).map((delivery) => delivery.event.type);
    expect(typesOf(`${t}/${card.body.id}`)).toEqual(['tokenvault.tokens.TokenCreated']);
    expect(typesOf(`${t}/${plain.body.id}`).filter((type) => !type.endsWith('TokenRead'))).toEqual([
      'tokenvault.tokens.TokenCreated',
      'tokenvault.tokens.TokenDeleted',
    ]);
    expect(typesOf(`${t}/${application.body.id}`)).toEqual([
      'tokenvault.tenancy.ApplicationCreated',
      'tokenvault.tenancy.ApplicationUpdated',
      'tokenvault.tenancy.ApplicationDeleted',
    ]);
    expect(typesOf(t)).toContain('tokenvault.tenancy.TenantCreated');
    expect(typesOf(`${t}/${proxy.body.id}`)).toEqual([
      'tokenvault.proxies.ProxyCreated',
      'tokenvault.proxies.ProxyDeleted',
    ]);
    const created = received.events.find((delivery) => delivery.key === `${t}/${card.body.id}`);
    expect(created?.topic).toBe(`${prefix}.tokens`);
    expect(created?.event.data).toEqual({
      token_id: card.body.id,
      tenant_id: t,
      type: 'card',
      containers: ['/pci/high/'],
      created_by: tenant.applicationId,
      created_at: expect.any(String),
    });

    // No token data (the marker was in the data and the metadata), ciphertext, fingerprint, key,
    // key hash or e-mail address in any message key or value.
    const secrets = [marker, '4242424242424242', tenant.apiKey, application.body.key, proxy.body.key];
    for (const event of stored) {
      const data = event.data as Record<string, unknown>;
      for (const field of [
        'data_ciphertext',
        'fingerprint',
        'key_hash',
        'email',
        'key_ciphertext',
        'configuration_ciphertext',
      ])
        if (typeof data[field] === 'string') secrets.push(data[field]);
    }
    expect(secrets.length).toBeGreaterThan(6);
    const everything = received.messages.map((delivery) => `${delivery.key}\n${delivery.raw}`).join('\n');
    for (const secret of secrets) expect(everything.includes(secret), `a secret on Kafka`).toBe(false);
  });
});
