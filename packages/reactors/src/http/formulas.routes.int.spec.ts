import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { ApplicationQueries, tenancyMigrations } from '@tokenvault/tenancy';
import { LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { FormulaCommands } from '../commands/formulas.commands.ts';
import { streams } from '../domain/reactors.events.ts';
import { reactorsMigrations } from '../migrations.ts';
import { reactorsProjection } from '../projections/reactors.projection.ts';
import { FormulaQueries } from '../queries/formulas.queries.ts';
import { ReactorQueries } from '../queries/reactors.queries.ts';
import { formulaRoutes } from './formulas.routes.ts';

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

const formula = {
  name: 'Charge',
  code: 'module.exports = async (req) => ({ raw: req.args });',
  configuration: [{ name: 'api_key', type: 'string' }],
  request_parameters: [{ name: 'amount', type: 'number' }],
};

describe('reactor formula routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide(
    [...vaultMigrations, ...tenancyMigrations, ...reactorsMigrations],
    [reactorsProjection],
  );
  let api: ReturnType<typeof routeApp>;

  beforeAll(() => {
    const { store, ownerPool, appPool, consistency } = side;
    const vault = new Vault(ownerPool, new LocalKeyring([['default', randomBytes(32).toString('base64')]]));
    const applications = new ApplicationQueries(appPool);
    const commands = new FormulaCommands({
      store,
      lockPool: ownerPool,
      reactors: new ReactorQueries(appPool, applications, vault),
      applications,
      clock: systemClock,
    });
    api = routeApp(formulaRoutes({ commands, queries: new FormulaQueries(appPool), consistency }), callers);
  });

  const create = async () => {
    const response = await api
      .post('/reactor-formulas')
      .set('svc-api-key', 'admin')
      .send(formula)
      .expect(201);
    return response.body as { id: string };
  };

  it('POST /reactor-formulas appends ReactorFormulaCreated and answers the formula, readable at once', async () => {
    const response = await api
      .post('/reactor-formulas')
      .set('svc-api-key', 'admin')
      .send(formula)
      .expect(201);
    const created = response.body as Record<string, unknown> & { id: string };
    expect(created).toMatchObject({ tenant_id: tenant, type: 'private', ...formula, created_by: actor });
    expect(await storedEvents(side.store, streams.formula(tenant, created.id))).toEqual([
      {
        type: 'ReactorFormulaCreated',
        data: {
          formula_id: created.id,
          tenant_id: tenant,
          ...formula,
          type: 'private',
          request_parameters: [{ name: 'amount', type: 'number', optional: false }],
          created_by: actor,
          created_at: created.created_at,
        },
        metadata: expect.objectContaining({ tenant_id: tenant, actor_id: actor }),
      },
    ]);
    const read = await api.get(`/reactor-formulas/${created.id}`).set('svc-api-key', 'reader').expect(200);
    expect(read.body).toEqual(created);
  });

  it('a body the schema refuses is a 400 problem naming each field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/reactor-formulas')
      .set('svc-api-key', 'admin')
      .send({ ...formula, code: 42, colour: 'blue' })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.code',
      'body.colour',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('code that does not compile is a 422 naming body.code, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/reactor-formulas')
      .set('svc-api-key', 'admin')
      .send({ ...formula, code: 'module.exports = (' })
      .expect(422);
    expect(response.body).toMatchObject({ status: 422, errors: { 'body.code': [expect.any(String)] } });
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('without an API key every route is a 401 problem', async () => {
    const { id } = await create();
    for (const call of [
      api.post('/reactor-formulas').send(formula),
      api.get('/reactor-formulas'),
      api.get(`/reactor-formulas/${id}`),
      api.put(`/reactor-formulas/${id}`).send(formula),
      api.delete(`/reactor-formulas/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401 });
    }
  });

  it('a key without the route’s permission is a 403 naming it, and the formula stays as it was', async () => {
    const { id } = await create();
    const refused = await api
      .post('/reactor-formulas')
      .set('svc-api-key', 'reader')
      .send(formula)
      .expect(403);
    expect(refused.body).toMatchObject({ status: 403, detail: expect.stringContaining('reactor:create') });
    await api.put(`/reactor-formulas/${id}`).set('svc-api-key', 'reader').send(formula).expect(403);
    await api.delete(`/reactor-formulas/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await storedEvents(side.store, streams.formula(tenant, id))).toHaveLength(1);
  });

  it('another tenant’s formula is a 404 on every route that names it, and stays as it was', async () => {
    const { id } = await create();
    const asOther = 'otherTenant';
    await api.get(`/reactor-formulas/${id}`).set('svc-api-key', asOther).expect(404);
    await api.put(`/reactor-formulas/${id}`).set('svc-api-key', asOther).send(formula).expect(404);
    await api.delete(`/reactor-formulas/${id}`).set('svc-api-key', asOther).expect(404);
    const listed = await api.get('/reactor-formulas').set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [], pagination: { total_items: 0 } });
    expect(await storedEvents(side.store, streams.formula(tenant, id))).toHaveLength(1);
  });

  it('PUT replaces the formula and DELETE removes it: each answered after the read model has it', async () => {
    const { id } = await create();
    const replaced = { ...formula, name: 'Refund', request_parameters: [] };
    const updated = await api
      .put(`/reactor-formulas/${id}`)
      .set('svc-api-key', 'admin')
      .send(replaced)
      .expect(200);
    expect(updated.body).toMatchObject({ id, name: 'Refund', request_parameters: [] });
    expect((await api.get(`/reactor-formulas/${id}`).set('svc-api-key', 'admin')).body).toEqual(updated.body);
    await api.delete(`/reactor-formulas/${id}`).set('svc-api-key', 'admin').expect(204);
    await api.get(`/reactor-formulas/${id}`).set('svc-api-key', 'admin').expect(404);
    expect((await storedEvents(side.store, streams.formula(tenant, id))).map((event) => event.type)).toEqual([
      'ReactorFormulaCreated',
      'ReactorFormulaUpdated',
      'ReactorFormulaDeleted',
    ]);
  });
});
