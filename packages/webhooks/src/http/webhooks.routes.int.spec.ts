import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { AddressAllowlist } from '@tokenvault/destinations';
import { createLogger, systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { webhookEventTypes } from '@tokenvault/contracts';
import { obliterateQueues, type Queue } from '@tokenvault/jobs';
import { LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { SigningKeyCommands } from '../commands/signing-key.commands.ts';
import { WebhookCommands } from '../commands/webhooks.commands.ts';
import {
  createWebhookDeliveryQueue,
  enqueueDeliveries,
  redeliver,
  type WebhookQueueJob,
} from '../deliveries/delivery-job.ts';
import { streams } from '../domain/webhooks.events.ts';
import { webhooksMigrations } from '../migrations.ts';
import { webhooksProjection } from '../projections/webhooks.projection.ts';
import { WebhookQueries } from '../queries/webhooks.queries.ts';
import { webhookRoutes } from './webhooks.routes.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
// With what subscribing to each event type needs (subscriptionNotHeld).
const writes = [
  'webhook:create',
  'webhook:read',
  'webhook:update',
  'webhook:delete',
  'token:read',
  'application:read',
];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, writes),
  reader: testPrincipal(tenant, randomUUID(), ['webhook:read']),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes),
};

/** A public address: nothing is sent when a webhook is written, and no name needs resolving. */
const webhook = { name: 'Orders', url: 'https://93.184.216.34/hooks', events: ['token:created'] };

describe('webhook routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide([...vaultMigrations, ...webhooksMigrations], [webhooksProjection]);
  let api: ReturnType<typeof routeApp>;
  // A real queue under a throw-away prefix: what a ping queues is read back from Redis.
  const queueConfig = {
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: `test-webhook-routes-${randomUUID()}`,
    WEBHOOK_ATTEMPTS: 3,
  };
  let queue: Queue<WebhookQueueJob>;

  beforeAll(async () => {
    const { store, ownerPool, appPool, consistency } = side;
    const vault = new Vault(ownerPool, new LocalKeyring([['default', randomBytes(32).toString('base64')]]));
    for (const tenantId of [tenant, otherTenant]) await vault.createTenantKeys(tenantId);
    const commands = new WebhookCommands({
      store,
      clock: systemClock,
      webhookAllowlist: new AddressAllowlist(''),
    });
    queue = createWebhookDeliveryQueue(
      queueConfig as Parameters<typeof createWebhookDeliveryQueue>[0],
      createLogger('silent'),
    );
    api = routeApp(
      webhookRoutes({
        commands,
        queries: new WebhookQueries(appPool),
        consistency,
        signingKeys: new SigningKeyCommands({
          store,
          clock: systemClock,
          vault,
          signingKeyOverlapSeconds: 24 * 3600,
        }),
        enqueueWebhookDeliveries: (deliveries) => enqueueDeliveries(queue, deliveries),
        redeliverWebhookDelivery: (tenantId, webhookId, deliveryId) =>
          redeliver(queue, new WebhookQueries(appPool), tenantId, webhookId, deliveryId),
        clock: systemClock,
      }),
      callers,
    );
  });

  afterAll(async () => {
    await queue.close();
    await obliterateQueues(queueConfig);
  });

  const create = async () => {
    const response = await api.post('/webhooks').set('svc-api-key', 'admin').send(webhook).expect(201);
    return response.body as { id: string };
  };

  it('POST /webhooks appends WebhookCreated and answers the webhook (enabled), readable at once', async () => {
    const response = await api
      .post('/webhooks')
      .set('svc-api-key', 'admin')
      .send({ ...webhook, notify_email: 'ops@example.com' })
      .expect(201);
    const created = response.body as Record<string, unknown> & { id: string };
    expect(created).toEqual({
      id: expect.any(String),
      tenant_id: tenant,
      status: 'enabled',
      name: 'Orders',
      url: 'https://93.184.216.34/hooks',
      notify_email: 'ops@example.com',
      events: ['token:created'],
      created_by: actor,
      created_at: expect.any(String),
    });
    const events = await storedEvents(side.store, streams.webhook(tenant, created.id));
    expect(events.map((event) => event.type)).toEqual(['WebhookCreated']);
    expect(events[0]!.metadata).toMatchObject({ tenant_id: tenant, actor_id: actor });
    const read = await api.get(`/webhooks/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual(created);
    const listed = await api.get('/webhooks').set('svc-api-key', 'reader').expect(200);
    expect((listed.body as { data: { id: string }[] }).data.map((item) => item.id)).toContain(created.id);
  });

  it('GET /webhooks/event-types lists what a webhook may subscribe to; GET /ping answers 204', async () => {
    const types = await api.get('/webhooks/event-types').set('svc-api-key', 'reader').expect(200);
    expect(types.body).toEqual(webhookEventTypes);
    expect(types.body).toContain('token:created');
    await api.get('/ping').expect(204);
  });

  it('a body the schema refuses is a 400 problem naming each field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/webhooks')
      .set('svc-api-key', 'admin')
      .send({
        url: webhook.url,
        events: ['token:exploded'],
        notify_email: 'not an address',
        status: 'paused',
      })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.events.0',
      'body.name',
      'body.notify_email',
      'body.status',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('a URL the destination rules refuse (loopback, a cloud metadata address) is a 400 naming body.url', async () => {
    const head = await side.store.headPosition();
    for (const url of ['https://127.0.0.1/hooks', 'https://169.254.169.254/latest/meta-data']) {
      const response = await api
        .post('/webhooks')
        .set('svc-api-key', 'admin')
        .send({ ...webhook, url })
        .expect(400);
      expect(response.body).toMatchObject({ errors: { 'body.url': [expect.any(String)] } });
    }
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('without an API key every webhook route is a 401 problem', async () => {
    const { id } = await create();
    for (const call of [
      api.post('/webhooks').send(webhook),
      api.get('/webhooks'),
      api.get('/webhooks/event-types'),
      api.get(`/webhooks/${id}`),
      api.put(`/webhooks/${id}`).send(webhook),
      api.delete(`/webhooks/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401, title: 'Unauthorized' });
    }
  });

  it('a key without the route’s permission is a 403 naming it, and the webhook stays as it was', async () => {
    const { id } = await create();
    const refused = await api.post('/webhooks').set('svc-api-key', 'reader').send(webhook).expect(403);
    expect(refused.body).toMatchObject({ status: 403, detail: expect.stringContaining('webhook:create') });
    await api.put(`/webhooks/${id}`).set('svc-api-key', 'reader').send(webhook).expect(403);
    await api.delete(`/webhooks/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await storedEvents(side.store, streams.webhook(tenant, id))).toHaveLength(1);
  });

  it('another tenant’s webhook is a 404 on every route that names it, never listed, and stays as it was', async () => {
    const { id } = await create();
    const asOther = 'otherTenant';
    await api.get(`/webhooks/${id}`).set('svc-api-key', asOther).expect(404);
    await api.put(`/webhooks/${id}`).set('svc-api-key', asOther).send(webhook).expect(404);
    await api.delete(`/webhooks/${id}`).set('svc-api-key', asOther).expect(404);
    const listed = await api.get('/webhooks').set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [], pagination: { total_items: 0 } });
    expect(await storedEvents(side.store, streams.webhook(tenant, id))).toHaveLength(1);
    expect(await storedEvents(side.store, streams.webhook(otherTenant, id))).toEqual([]);
  });

  it('PUT disables and re-enables (status kept when not named) and DELETE removes it: each answered after the read model has it', async () => {
    const { id } = await create();
    const disabled = await api
      .put(`/webhooks/${id}`)
      .set('svc-api-key', 'admin')
      .send({ ...webhook, status: 'disabled' })
      .expect(200);
    expect(disabled.body).toMatchObject({ id, status: 'disabled', modified_by: actor });
    const renamed = await api
      .put(`/webhooks/${id}`)
      .set('svc-api-key', 'admin')
      .send({ ...webhook, name: 'Renamed' })
      .expect(200);
    expect(renamed.body).toMatchObject({ name: 'Renamed', status: 'disabled' });
    await api
      .put(`/webhooks/${id}`)
      .set('svc-api-key', 'admin')
      .send({ ...webhook, status: 'enabled' })
      .expect(200);
    expect((await api.get(`/webhooks/${id}`).set('svc-api-key', 'admin')).body).toMatchObject({
      status: 'enabled',
    });
    await api.delete(`/webhooks/${id}`).set('svc-api-key', 'admin').expect(204);
    await api.get(`/webhooks/${id}`).set('svc-api-key', 'admin').expect(404);
  });

  it('GET /webhooks/signing-key makes the tenant’s key once and answers it; it is sealed in its event', async () => {
    const first = await api.get('/webhooks/signing-key').set('svc-api-key', 'admin').expect(200);
    const { key } = first.body as { key: string };
    expect(key).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await api.get('/webhooks/signing-key').set('svc-api-key', 'admin').expect(200, { key });
    const other = await api.get('/webhooks/signing-key').set('svc-api-key', 'otherTenant').expect(200);
    expect((other.body as { key: string }).key).not.toBe(key);
    const events = await storedEvents(side.store, streams.signingKey(tenant));
    expect(events.map((event) => event.type)).toEqual(['WebhookSigningKeyRotated']);
    expect(JSON.stringify(events)).not.toContain(key.slice('whsec_'.length));
  });

  it('POST /webhooks/signing-key/rotate answers a new key, with webhook:update only', async () => {
    const { key } = (await api.get('/webhooks/signing-key').set('svc-api-key', 'admin').expect(200)).body as {
      key: string;
    };
    await api.post('/webhooks/signing-key/rotate').set('svc-api-key', 'reader').expect(403);
    const rotated = await api.post('/webhooks/signing-key/rotate').set('svc-api-key', 'admin').expect(200);
    const next = (rotated.body as { key: string }).key;
    expect(next).not.toBe(key);
    await api.get('/webhooks/signing-key').set('svc-api-key', 'admin').expect(200, { key: next });
  });

  it('GET /webhooks/signing-key needs webhook:update: a webhook:read key gets a 403 and no secret', async () => {
    const denied = await api.get('/webhooks/signing-key').set('svc-api-key', 'reader').expect(403);
    expect(JSON.stringify(denied.body)).not.toContain('whsec_');
  });

  it('POST /webhooks/{id}/ping queues one webhook:ping delivery under its delivery id; another tenant’s is a 404', async () => {
    const { id } = await create();
    const response = await api.post(`/webhooks/${id}/ping`).set('svc-api-key', 'admin').expect(202);
    const { delivery_id: deliveryId } = response.body as { delivery_id: string };
    expect(deliveryId).toMatch(new RegExp(`^${id}\\.ping-`));
    const job = await queue.getJob(deliveryId);
    expect(job?.data).toEqual({
      delivery_id: deliveryId,
      tenant_id: tenant,
      webhook_id: id,
      event_id: deliveryId.slice(id.length + 1),
      type: 'webhook:ping',
      occurred_at: expect.any(String),
      data: {},
    });
    await api.post(`/webhooks/${id}/ping`).set('svc-api-key', 'otherTenant').expect(404);
    await api.post(`/webhooks/${id}/ping`).set('svc-api-key', 'reader').expect(403);
  });

  it('GET /webhooks/{id}/deliveries answers the history, newest first, without bodies; another tenant’s is a 404', async () => {
    const { id } = await create();
    const rows = [
      ['a', 'succeeded', 200, null, '2026-03-01T00:00:00.000Z'],
      ['b', 'retrying', null, 'The destination did not answer in time.', '2026-03-02T00:00:00.000Z'],
    ] as const;
    for (const [suffix, status, responseStatus, error, at] of rows) {
      await side.ownerPool.query(
        `INSERT INTO webhook_deliveries (tenant_id, webhook_id, id, event_id, event_type, status, attempts,
                                         response_status, error, created_at, last_attempt_at)
           VALUES ($1, $2, $3, $4, 'token:created', $5, 1, $6, $7, $8, $8)`,
        [tenant, id, `${id}.${suffix}`, suffix, status, responseStatus, error, at],
      );
    }
    const page = await api.get(`/webhooks/${id}/deliveries`).set('svc-api-key', 'reader').expect(200);
    expect(page.body).toMatchObject({
      pagination: { total_items: 2 },
      data: [
        {
          id: `${id}.b`,
          webhook_id: id,
          event_id: 'b',
          event_type: 'token:created',
          status: 'retrying',
          attempts: 1,
          error: 'The destination did not answer in time.',
          created_at: '2026-03-02T00:00:00.000Z',
          last_attempt_at: '2026-03-02T00:00:00.000Z',
        },
        { id: `${id}.a`, status: 'succeeded', response_status: 200 },
      ],
    });
    await api.get(`/webhooks/${id}/deliveries`).set('svc-api-key', 'otherTenant').expect(404);
  });

  it('POST /webhooks/{id}/deliveries/{delivery_id}/redeliver queues a held delivery again; another tenant’s or an unknown one is a 404', async () => {
    const { id } = await create();
    const pinged = await api.post(`/webhooks/${id}/ping`).set('svc-api-key', 'admin').expect(202);
    const { delivery_id: deliveryId } = pinged.body as { delivery_id: string };
    await api
      .post(`/webhooks/${id}/deliveries/${deliveryId}/redeliver`)
      .set('svc-api-key', 'admin')
      .expect(202, { delivery_id: deliveryId });
    await api
      .post(`/webhooks/${id}/deliveries/${deliveryId}/redeliver`)
      .set('svc-api-key', 'otherTenant')
      .expect(404);
    await api
      .post(`/webhooks/${id}/deliveries/${id}.unknown/redeliver`)
      .set('svc-api-key', 'admin')
      .expect(404);
    await api
      .post(`/webhooks/${id}/deliveries/${deliveryId}/redeliver`)
      .set('svc-api-key', 'reader')
      .expect(403);
  });
});
