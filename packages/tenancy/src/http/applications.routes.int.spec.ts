import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { createApplicationBody } from '@tokenvault/contracts';
import { systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { ApplicationCommands } from '../commands/applications.commands.ts';
import { hashApiKey } from '../domain/api-key.ts';
import { streams } from '../domain/tenancy.events.ts';
import { tenancyMigrations } from '../migrations.ts';
import { tenancyProjection } from '../projections/tenancy.projection.ts';
import { ApplicationQueries } from '../queries/applications.queries.ts';
import { applicationRoutes } from './applications.routes.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const member = randomUUID();
const writes = ['application:create', 'application:read', 'application:update', 'application:delete'];
/** SVC-API-KEY → the caller it names: members, who hold every grant (and an application, below). */
const callers = {
  member: testPrincipal(tenant, member, writes, { actorType: 'user' }),
  reader: testPrincipal(tenant, randomUUID(), ['application:read'], { actorType: 'user' }),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes, { actorType: 'user' }),
};

const application = { name: 'Checkout', type: 'private', permissions: ['token:read'] };

describe('application routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide(tenancyMigrations, [tenancyProjection]);
  let api: ReturnType<typeof routeApp>;

  beforeAll(async () => {
    const { store, appPool, consistency } = side;
    const commands = new ApplicationCommands(store, 1_000, systemClock);
    // An application of the tenant that may create applications, with no more than it holds.
    const permissions = ['application:create', 'token:read'];
    const body = createApplicationBody.parse({ ...application, permissions });
    const creator = (await commands.create(callers.member, body, 'given')).application;
    // An application whose own rule masks cards: it may grant mask or redact there, never reveal.
    const maskingRules = [{ container: '/pci/', transform: 'mask', permissions: ['token:read'] }];
    const maskingBody = createApplicationBody.parse({
      ...application,
      permissions: ['application:create'],
      rules: maskingRules,
    });
    const masking = (await commands.create(callers.member, maskingBody, 'given')).application;
    api = routeApp(applicationRoutes({ commands, queries: new ApplicationQueries(appPool), consistency }), {
      ...callers,
      creator: testPrincipal(tenant, creator.id, permissions),
      masking: testPrincipal(tenant, masking.id, ['application:create'], { rules: maskingBody.rules }),
    });
  });

  const create = async () => {
    const response = await api
      .post('/applications')
      .set('svc-api-key', 'member')
      .send(application)
      .expect(201);
    return response.body as { id: string };
  };

  it('POST /applications appends ApplicationCreated (the key’s hash, never the key) and answers it with its key once', async () => {
    const response = await api
      .post('/applications')
      .set('svc-api-key', 'member')
      .send(application)
      .expect(201);
    const { key, ...created } = response.body as Record<string, unknown> & { id: string; key: string };
    expect(created).toMatchObject({
      tenant_id: tenant,
      name: 'Checkout',
      type: 'private',
      permissions: ['token:read'],
      rules: [],
      created_by: member,
    });
    const events = await storedEvents(side.store, streams.application(tenant, created.id));
    expect(events.map((event) => event.type)).toEqual(['ApplicationCreated']);
    expect(events[0]!.data).toMatchObject({ key_hash: hashApiKey(key) });
    expect(JSON.stringify(events[0]!.data)).not.toContain(key);
    const read = await api.get(`/applications/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual(created);
  });

  it('a body the schema refuses is a 400 problem naming each field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/applications')
      .set('svc-api-key', 'member')
      .send({ name: '', type: 'public', permissions: ['token:read'] })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.name',
      'body.permissions.0',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('an application granting what it does not hold is a 403 naming the field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/applications')
      .set('svc-api-key', 'creator')
      .send({ ...application, permissions: ['token:read', 'token:delete'] })
      .expect(403);
    expect(response.body).toMatchObject({
      errors: { 'body.permissions': [expect.stringContaining('token:delete')] },
    });
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('rules take the anchor’s shape (description, priority, transform); one given without transform reveals', async () => {
    const rules = [
      {
        description: 'Support sees masked cards',
        priority: 1,
        container: '/pci/',
        transform: 'mask',
        permissions: ['token:read'],
      },
      { priority: 2, container: '/', permissions: ['token:read'] },
    ];
    const response = await api
      .post('/applications')
      .set('svc-api-key', 'member')
      .send({ ...application, permissions: [], rules })
      .expect(201);
    const { key: _key, ...created } = response.body as Record<string, unknown> & { id: string; key: string };
    expect(created.rules).toEqual([rules[0], { ...rules[1], transform: 'reveal' }]);
    const read = await api.get(`/applications/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual(created);
  });

  it('a key whose rule masks cannot grant reveal there: a 403 naming body.rules.N.transform, nothing appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/applications')
      .set('svc-api-key', 'masking')
      .send({
        ...application,
        permissions: [],
        rules: [{ container: '/pci/high/', permissions: ['token:read'] }],
      })
      .expect(403);
    expect(response.body).toMatchObject({
      errors: { 'body.rules.0.transform': [expect.stringContaining('more than this key holds (mask)')] },
    });
    expect(await side.store.headPosition()).toEqual(head);
    await api
      .post('/applications')
      .set('svc-api-key', 'masking')
      .send({
        ...application,
        permissions: [],
        rules: [{ container: '/pci/high/', transform: 'redact', permissions: ['token:read'] }],
      })
      .expect(201);
  });

  it('without an API key every route is a 401 problem', async () => {
    const { id } = await create();
    for (const call of [
      api.post('/applications').send(application),
      api.get('/applications'),
      api.get(`/applications/${id}`),
      api.put(`/applications/${id}`).send({ name: 'Renamed' }),
      api.delete(`/applications/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401 });
    }
  });

  it('a key without the route’s permission is a 403 naming it, and the application stays as it was', async () => {
    const { id } = await create();
    const refused = await api
      .post('/applications')
      .set('svc-api-key', 'reader')
      .send(application)
      .expect(403);
    expect(refused.body).toMatchObject({
      status: 403,
      detail: expect.stringContaining('application:create'),
    });
    await api.put(`/applications/${id}`).set('svc-api-key', 'reader').send({ name: 'Renamed' }).expect(403);
    await api.delete(`/applications/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await storedEvents(side.store, streams.application(tenant, id))).toHaveLength(1);
  });

  it('another tenant’s application is a 404 on every route that names it, and stays as it was', async () => {
    const { id } = await create();
    const asOther = 'otherTenant';
    await api.get(`/applications/${id}`).set('svc-api-key', asOther).expect(404);
    await api.put(`/applications/${id}`).set('svc-api-key', asOther).send({ name: 'Mine' }).expect(404);
    await api.delete(`/applications/${id}`).set('svc-api-key', asOther).expect(404);
    const listed = await api.get('/applications').set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [], pagination: { total_items: 0 } });
    expect(await storedEvents(side.store, streams.application(tenant, id))).toHaveLength(1);
  });

  it('PUT replaces the name and grants and DELETE removes the application: each answered after the read model has it', async () => {
    const { id } = await create();
    const updated = await api
      .put(`/applications/${id}`)
      .set('svc-api-key', 'member')
      .send({ name: 'Renamed', permissions: ['token:create'] })
      .expect(200);
    expect(updated.body).toMatchObject({ id, name: 'Renamed', permissions: ['token:create'] });
    expect((await api.get(`/applications/${id}`).set('svc-api-key', 'member')).body).toEqual(updated.body);
    await api.delete(`/applications/${id}`).set('svc-api-key', 'member').expect(204);
    await api.get(`/applications/${id}`).set('svc-api-key', 'member').expect(404);
    expect(
      (await storedEvents(side.store, streams.application(tenant, id))).map((event) => event.type),
    ).toEqual(['ApplicationCreated', 'ApplicationUpdated', 'ApplicationDeleted']);
  });

  describe('keys', () => {
    interface Key {
      id: string;
      key?: string;
      expires_at?: string;
    }
    const keysOf = async (id: string) =>
      (await api.get(`/applications/${id}/keys`).set('svc-api-key', 'reader').expect(200)).body as Key[];

    it('POST /applications/{id}/keys appends ApplicationKeyCreated (its hash) and answers the key once; GET never shows it', async () => {
      const { id } = await create();
      // Basis Theory's SDK sends no body at all.
      const created = (await api.post(`/applications/${id}/keys`).set('svc-api-key', 'member').expect(201))
        .body as Key & { key: string };
      expect(created).toMatchObject({ tenant_id: tenant, application_id: id, created_by: member });
      const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
      const expiring = (
        await api
          .post(`/applications/${id}/keys`)
          .set('svc-api-key', 'member')
          .send({ expires_at: expiresAt })
          .expect(201)
      ).body as Key & { key: string };
      expect(expiring.expires_at).toBe(expiresAt);
      const events = await storedEvents(side.store, streams.application(tenant, id));
      expect(events.map((event) => event.type)).toEqual([
        'ApplicationCreated',
        'ApplicationKeyCreated',
        'ApplicationKeyCreated',
      ]);
      expect(events[1]!.data).toMatchObject({ key_id: created.id, key_hash: hashApiKey(created.key) });
      const listed = await keysOf(id);
      expect(listed.map((key) => key.id)).toEqual([id, created.id, expiring.id]);
      const { key: _shown, ...withoutKey } = expiring;
      expect(listed[2]).toEqual(withoutKey);
      const one = await api
        .get(`/applications/${id}/keys/${expiring.id}`)
        .set('svc-api-key', 'reader')
        .expect(200);
      expect(one.body).toEqual(withoutKey);
      const everything = JSON.stringify([listed, one.body, events.map((event) => event.data)]);
      for (const key of [created.key, expiring.key]) expect(everything).not.toContain(key);
    });

    it('DELETE /applications/{id}/keys/{key_id} removes that key only, then it is a 404', async () => {
      const { id } = await create();
      const created = (await api.post(`/applications/${id}/keys`).set('svc-api-key', 'member').expect(201))
        .body as Key;
      await api.delete(`/applications/${id}/keys/${id}`).set('svc-api-key', 'member').expect(204);
      expect((await keysOf(id)).map((key) => key.id)).toEqual([created.id]);
      await api.get(`/applications/${id}/keys/${id}`).set('svc-api-key', 'reader').expect(404);
      await api.delete(`/applications/${id}/keys/${id}`).set('svc-api-key', 'member').expect(404);
    });

    it('a refused body names the field; no key, a lesser key, a key minting for more than it holds and another tenant append nothing', async () => {
      const { id } = await create();
      const head = await side.store.headPosition();
      const past = await api
        .post(`/applications/${id}/keys`)
        .set('svc-api-key', 'member')
        .send({ expires_at: '2020-01-01T00:00:00Z' })
        .expect(400);
      expect(Object.keys((past.body as { errors: object }).errors)).toEqual(['body.expires_at']);
      const malformed = await api
        .post(`/applications/${id}/keys`)
        .set('svc-api-key', 'member')
        .send({ expires_at: 'tomorrow', key: 'mine' })
        .expect(400);
      // A caller never chooses its key: the service generates it.
      expect(Object.keys((malformed.body as { errors: object }).errors).sort()).toEqual([
        'body.expires_at',
        'body.key',
      ]);
      await api.post(`/applications/${id}/keys`).expect(401);
      await api.get(`/applications/${id}/keys`).expect(401);
      await api.post(`/applications/${id}/keys`).set('svc-api-key', 'reader').expect(403);
      await api.delete(`/applications/${id}/keys/${id}`).set('svc-api-key', 'reader').expect(403);
      // `creator` holds application:create and token:read, not application:update.
      await api.post(`/applications/${id}/keys`).set('svc-api-key', 'creator').expect(403);
      await api.post(`/applications/${id}/keys`).set('svc-api-key', 'otherTenant').expect(404);
      await api.get(`/applications/${id}/keys`).set('svc-api-key', 'otherTenant').expect(404);
      await api.get(`/applications/${id}/keys/${id}`).set('svc-api-key', 'otherTenant').expect(404);
      await api.delete(`/applications/${id}/keys/${id}`).set('svc-api-key', 'otherTenant').expect(404);
      expect(await side.store.headPosition()).toEqual(head);
    });

    it('GET /applications/key answers the calling key’s own application, and a member’s session a 403 saying why', async () => {
      const own = await api.get('/applications/key').set('svc-api-key', 'creator').expect(200);
      expect(own.body).toMatchObject({ name: 'Checkout', permissions: ['application:create', 'token:read'] });
      const session = await api.get('/applications/key').set('svc-api-key', 'member').expect(403);
      expect(session.body).toMatchObject({ detail: expect.stringContaining('API key') });
      await api.get('/applications/key').expect(401);
    });
  });
});
