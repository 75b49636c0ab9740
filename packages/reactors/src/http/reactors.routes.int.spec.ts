import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { reactorFormulaBody } from '@tokenvault/contracts';
import { systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { ApplicationQueries, tenancyMigrations } from '@tokenvault/tenancy';
import { LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { FormulaCommands } from '../commands/formulas.commands.ts';
import { ReactorCommands } from '../commands/reactors.commands.ts';
import { streams } from '../domain/reactors.events.ts';
import { reactorsMigrations } from '../migrations.ts';
import { reactorsProjection } from '../projections/reactors.projection.ts';
import { ReactorQueries } from '../queries/reactors.queries.ts';
import { reactorRoutes } from './reactors.routes.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const writes = ['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete'];
/** SVC-API-KEY → the caller it names. */
const callers = {
  admin: testPrincipal(tenant, actor, writes),
  reader: testPrincipal(tenant, randomUUID(), ['reactor:read']),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes),
};

describe('reactor routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide(
    [...vaultMigrations, ...tenancyMigrations, ...reactorsMigrations],
    [reactorsProjection],
  );
  let api: ReturnType<typeof routeApp>;
  /** The tenant's formula every reactor here runs: its configuration takes an api_key. */
  let formulaId: string;
  const reactor = () => ({
    name: 'Charge it',
    formula: { id: formulaId },
    configuration: { api_key: 'sk_1' },
  });

  beforeAll(async () => {
    const { store, ownerPool, appPool, consistency } = side;
    const vault = new Vault(ownerPool, new LocalKeyring([['default', randomBytes(32).toString('base64')]]));
    // What creating a tenant gives it: its data keys.
    for (const tenantId of [tenant, otherTenant]) await vault.createTenantKeys(tenantId);
    const applications = new ApplicationQueries(appPool);
    const queries = new ReactorQueries(appPool, applications, vault);
    const deps = { store, lockPool: ownerPool, applications, clock: systemClock };
    const formulas = new FormulaCommands({ ...deps, reactors: queries });
    const commands = new ReactorCommands({ ...deps, consistency, vault });
    api = routeApp(reactorRoutes({ commands, queries, consistency }), callers);
    const body = reactorFormulaBody.parse({
      name: 'Charge',
      code: 'module.exports = async (req) => ({ raw: req.args });',
      configuration: [{ name: 'api_key', type: 'string' }],
    });
    formulaId = (await formulas.create(callers.admin, body, 'given')).formula.id;
  });

  const create = async () => {
    const response = await api.post('/reactors').set('svc-api-key', 'admin').send(reactor()).expect(201);
    return response.body as { id: string };
  };

  it('POST /reactors appends ReactorCreated (its configuration sealed) and answers the reactor, readable at once', async () => {
    const response = await api.post('/reactors').set('svc-api-key', 'admin').send(reactor()).expect(201);
    const created = response.body as Record<string, unknown> & { id: string };
    expect(created).toMatchObject({
      tenant_id: tenant,
      name: 'Charge it',
      formula: { id: formulaId, name: 'Charge' },
      configuration: { api_key: 'sk_1' },
      created_by: actor,
    });
    const events = await storedEvents(side.store, streams.reactor(tenant, created.id));
    expect(events).toEqual([
      {
        type: 'ReactorCreated',
        data: expect.objectContaining({ reactor_id: created.id, tenant_id: tenant, formula_id: formulaId }),
        metadata: expect.objectContaining({ tenant_id: tenant, actor_id: actor }),
      },
    ]);
    expect(JSON.stringify(events[0]!.data)).not.toContain('sk_1');
    const read = await api.get(`/reactors/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual(created);
  });

  it('a body the schema refuses is a 400 problem naming each field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/reactors')
      .set('svc-api-key', 'admin')
      .send({ ...reactor(), name: undefined, formula: { id: 'not-an-id' } })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.formula.id',
      'body.name',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('a configuration its formula does not declare is a 400 naming each entry, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/reactors')
      .set('svc-api-key', 'admin')
      .send({ ...reactor(), configuration: { secret: 'x' } })
      .expect(400);
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.configuration.api_key',
      'body.configuration.secret',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('without an API key every route is a 401 problem', async () => {
    const { id } = await create();
    for (const call of [
      api.post('/reactors').send(reactor()),
      api.get('/reactors'),
      api.get(`/reactors/${id}`),
      api.put(`/reactors/${id}`).send({ name: 'Renamed', configuration: { api_key: 'sk_2' } }),
      api.delete(`/reactors/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401 });
    }
  });

  it('a key without the route’s permission is a 403 naming it, and the reactor stays as it was', async () => {
    const { id } = await create();
    const refused = await api.post('/reactors').set('svc-api-key', 'reader').send(reactor()).expect(403);
    expect(refused.body).toMatchObject({ status: 403, detail: expect.stringContaining('reactor:create') });
    const update = { name: 'Renamed', configuration: { api_key: 'sk_2' } };
    await api.put(`/reactors/${id}`).set('svc-api-key', 'reader').send(update).expect(403);
    await api.delete(`/reactors/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await storedEvents(side.store, streams.reactor(tenant, id))).toHaveLength(1);
  });

  it('another tenant’s reactor or formula is a 404, and nothing of this tenant changes', async () => {
    const { id } = await create();
    const asOther = 'otherTenant';
    const update = { name: 'Mine', configuration: { api_key: 'sk_2' } };
    await api.get(`/reactors/${id}`).set('svc-api-key', asOther).expect(404);
    await api.put(`/reactors/${id}`).set('svc-api-key', asOther).send(update).expect(404);
    await api.delete(`/reactors/${id}`).set('svc-api-key', asOther).expect(404);
    // A reactor of the other tenant on this tenant's formula: the formula is not found there.
    const head = await side.store.headPosition();
    await api.post('/reactors').set('svc-api-key', asOther).send(reactor()).expect(404);
    expect(await side.store.headPosition()).toEqual(head);
    const listed = await api.get('/reactors').query({ id }).set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [], pagination: { total_items: 0 } });
    expect(await storedEvents(side.store, streams.reactor(tenant, id))).toHaveLength(1);
  });

  it('PATCH changes the fields named and keeps the others; a refused body, no key, a lesser key and another tenant change nothing', async () => {
    const { id } = await create();
    const patched = await api
      .patch(`/reactors/${id}`)
      .set('svc-api-key', 'admin')
      .set('content-type', 'application/merge-patch+json')
      .send(JSON.stringify({ name: 'Patched' }))
      .expect(200);
    expect(patched.body).toMatchObject({ id, name: 'Patched', configuration: { api_key: 'sk_1' } });
    expect((await api.get(`/reactors/${id}`).set('svc-api-key', 'reader')).body).toEqual(patched.body);
    const refused = await api
      .patch(`/reactors/${id}`)
      .set('svc-api-key', 'admin')
      .send({ name: '', formula: { id: formulaId } })
      .expect(400);
    expect(Object.keys((refused.body as { errors: object }).errors).sort()).toEqual([
      'body.formula',
      'body.name',
    ]);
    await api.patch(`/reactors/${id}`).send({ name: 'x' }).expect(401);
    await api.patch(`/reactors/${id}`).set('svc-api-key', 'reader').send({ name: 'x' }).expect(403);
    await api.patch(`/reactors/${id}`).set('svc-api-key', 'otherTenant').send({ name: 'x' }).expect(404);
    expect((await storedEvents(side.store, streams.reactor(tenant, id))).map((event) => event.type)).toEqual([
      'ReactorCreated',
      'ReactorUpdated',
    ]);
  });

  it('PUT replaces the name and configuration and DELETE removes the reactor: each answered after the read model has it', async () => {
    const { id } = await create();
    const updated = await api
      .put(`/reactors/${id}`)
      .set('svc-api-key', 'admin')
      .send({ name: 'Renamed', configuration: { api_key: 'sk_2' } })
      .expect(200);
    expect(updated.body).toMatchObject({ id, name: 'Renamed', configuration: { api_key: 'sk_2' } });
    expect((await api.get(`/reactors/${id}`).set('svc-api-key', 'admin')).body).toEqual(updated.body);
    await api.delete(`/reactors/${id}`).set('svc-api-key', 'admin').expect(204);
    await api.get(`/reactors/${id}`).set('svc-api-key', 'admin').expect(404);
    expect((await storedEvents(side.store, streams.reactor(tenant, id))).map((event) => event.type)).toEqual([
      'ReactorCreated',
      'ReactorUpdated',
      'ReactorDeleted',
    ]);
  });
});
