import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { AddressAllowlist } from '@tokenvault/destinations';
import { systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { webhookEventTypes } from '@tokenvault/contracts';
import { WebhookCommands } from '../commands/webhooks.commands.ts';
import { streams } from '../domain/webhooks.events.ts';
import { webhooksMigrations } from '../migrations.ts';
import { webhooksProjection } from '../projections/webhooks.projection.ts';
import { WebhookQueries } from '../queries/webhooks.queries.ts';
import { webhookRoutes } from './webhooks.routes.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const writes = ['webhook:create', 'webhook:read', 'webhook:update', 'webhook:delete'];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, writes),
  reader: testPrincipal(tenant, randomUUID(), ['webhook:read']),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes),
};

/** A public address: nothing is sent when a webhook is written, and no name needs resolving. */
const webhook = { name: 'Orders', url: 'https://93.184.216.34/hooks', events: ['token:created'] };

describe('webhook routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide(webhooksMigrations, [webhooksProjection]);
  let api: ReturnType<typeof routeApp>;

  beforeAll(() => {
    const { store, appPool, consistency } = side;
    const commands = new WebhookCommands({
      store,
      clock: systemClock,
      webhookAllowlist: new AddressAllowlist(''),
    });
    api = routeApp(webhookRoutes({ commands, queries: new WebhookQueries(appPool), consistency }), callers);
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
});
