import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { ApplicationQueries, tenancyMigrations, tenancyProjection } from '@tokenvault/tenancy';
import { LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { ProxyCommands } from '../commands/proxies.commands.ts';
import { AddressAllowlist } from '@tokenvault/destinations';
import { streams } from '../domain/proxy.events.ts';
import { proxiesMigrations } from '../migrations.ts';
import { proxiesProjection } from '../projections/proxies.projection.ts';
import { ProxyQueries } from '../queries/proxies.queries.ts';
import { proxyRoutes } from './proxies.routes.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const writes = ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, writes),
  reader: testPrincipal(tenant, randomUUID(), ['proxy:read']),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes),
};

/** A public address: nothing is sent when a proxy is written, and no name needs resolving. */
const proxy = {
  name: 'Payments',
  destination_url: 'https://93.184.216.34/v1',
  configuration: { secret: 's3cr3t' },
};

describe('proxy routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide(
    [...vaultMigrations, ...tenancyMigrations, ...proxiesMigrations],
    [tenancyProjection, proxiesProjection],
  );
  let api: ReturnType<typeof routeApp>;

  beforeAll(async () => {
    const { store, ownerPool, appPool, consistency } = side;
    const vault = new Vault(ownerPool, new LocalKeyring([['default', randomBytes(32).toString('base64')]]));
    // What creating a tenant gives it: its data keys.
    for (const tenantId of [tenant, otherTenant]) await vault.createTenantKeys(tenantId);
    const commands = new ProxyCommands({
      store,
      applications: new ApplicationQueries(appPool),
      vault,
      clock: systemClock,
      allowlist: new AddressAllowlist(''),
    });
    api = routeApp(
      proxyRoutes({ commands, queries: new ProxyQueries(appPool, vault), consistency }),
      callers,
    );
  });

  const create = async (caller: keyof typeof callers = 'admin') => {
    const response = await api.post('/proxies').set('svc-api-key', caller).send(proxy).expect(201);
    return response.body as { id: string; key: string };
  };

  it('POST /proxies appends ProxyCreated (its configuration and key sealed) and answers the proxy, readable at once', async () => {
    const response = await api.post('/proxies').set('svc-api-key', 'admin').send(proxy).expect(201);
    const created = response.body as Record<string, unknown> & { id: string; key: string };
    expect(created).toMatchObject({
      tenant_id: tenant,
      name: 'Payments',
      destination_url: 'https://93.184.216.34/v1',
      configuration: { secret: 's3cr3t' },
      require_auth: true,
      created_by: actor,
    });
    expect(created.key).toMatch(/^[\w-]{43}$/);
    const events = await storedEvents(side.store, streams.proxy(tenant, created.id));
    expect(events.map((event) => event.type)).toEqual(['ProxyCreated']);
    expect(events[0]!.metadata).toMatchObject({ tenant_id: tenant, actor_id: actor });
    expect(JSON.stringify(events[0]!.data)).not.toContain('s3cr3t');
    expect(JSON.stringify(events[0]!.data)).not.toContain(created.key);
    const read = await api.get(`/proxies/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual(created);
  });

  it('a body the schema refuses is a 400 problem naming the field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/proxies')
      .set('svc-api-key', 'admin')
      .send({ ...proxy, name: undefined, timeout: 'soon' })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 400, title: 'Bad Request' });
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.name',
      'body.timeout',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('a destination the command refuses (a loopback address) is a 400 naming body.destination_url', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/proxies')
      .set('svc-api-key', 'admin')
      .send({ ...proxy, destination_url: 'https://127.0.0.1/v1' })
      .expect(400);
    expect(response.body).toMatchObject({ errors: { 'body.destination_url': [expect.any(String)] } });
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('without an API key every route is a 401 problem', async () => {
    const { id } = await create();
    for (const call of [
      api.post('/proxies').send(proxy),
      api.get('/proxies'),
      api.get(`/proxies/${id}`),
      api.patch(`/proxies/${id}`).send({ name: 'Renamed' }),
      api.delete(`/proxies/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401, title: 'Unauthorized' });
    }
  });

  it('a key without the route’s permission is a 403 naming it, and the proxy stays as it was', async () => {
    const { id } = await create();
    const refused = await api.post('/proxies').set('svc-api-key', 'reader').send(proxy).expect(403);
    expect(refused.body).toMatchObject({ status: 403, detail: expect.stringContaining('proxy:create') });
    await api.put(`/proxies/${id}`).set('svc-api-key', 'reader').send(proxy).expect(403);
    await api.delete(`/proxies/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await storedEvents(side.store, streams.proxy(tenant, id))).toHaveLength(1);
  });

  it('another tenant’s proxy is a 404 on every route that names it, and stays as it was', async () => {
    const { id } = await create();
    const asOther = 'otherTenant';
    await api.get(`/proxies/${id}`).set('svc-api-key', asOther).expect(404);
    await api.put(`/proxies/${id}`).set('svc-api-key', asOther).send(proxy).expect(404);
    await api.patch(`/proxies/${id}`).set('svc-api-key', asOther).send({ name: 'Mine' }).expect(404);
    await api.delete(`/proxies/${id}`).set('svc-api-key', asOther).expect(404);
    const listed = await api.get('/proxies').query({ id }).set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [], pagination: { total_items: 0 } });
    expect(await storedEvents(side.store, streams.proxy(tenant, id))).toHaveLength(1);
    expect(await storedEvents(side.store, streams.proxy(otherTenant, id))).toEqual([]);
  });

  it('PATCH changes the fields named and DELETE removes the proxy: each answered after the read model has it', async () => {
    const { id } = await create();
    const patched = await api
      .patch(`/proxies/${id}`)
      .set('svc-api-key', 'admin')
      .send({ name: 'Renamed' })
      .expect(200);
    expect(patched.body).toMatchObject({ id, name: 'Renamed', configuration: { secret: 's3cr3t' } });
    expect((await api.get(`/proxies/${id}`).set('svc-api-key', 'admin')).body).toMatchObject({
      name: 'Renamed',
    });
    await api.delete(`/proxies/${id}`).set('svc-api-key', 'admin').expect(204);
    await api.get(`/proxies/${id}`).set('svc-api-key', 'admin').expect(404);
    expect((await storedEvents(side.store, streams.proxy(tenant, id))).map((event) => event.type)).toEqual([
      'ProxyCreated',
      'ProxyUpdated',
      'ProxyDeleted',
    ]);
  });
});
