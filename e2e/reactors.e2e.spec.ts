import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { useStack, type TestTenant } from './support/stack.ts';

interface Problem {
  status: number;
  errors?: Record<string, string[]>;
}
interface Formula {
  id: string;
  tenant_id: string;
  name: string;
  code: string;
  configuration: unknown[];
  request_parameters: { name: string; optional: boolean }[];
  created_by?: string;
  created_at?: string;
  modified_by?: string;
  modified_at?: string;
}
interface Reactor {
  id: string;
  tenant_id: string;
  name: string;
  formula: Formula;
  configuration: Record<string, unknown>;
  application?: { id: string; name: string; type: string };
  created_by?: string;
  created_at?: string;
  modified_by?: string;
  modified_at?: string;
}
interface Page<T> {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number };
  data: T[];
}

const code = 'module.exports = async function (req) {\n  return { raw: req.args };\n};';
const formulaBody = (overrides: Record<string, unknown> = {}) => ({
  name: 'Charge a card',
  description: 'Charges through a gateway',
  type: 'private',
  code,
  configuration: [
    { name: 'API_KEY', type: 'string' },
    { name: 'RETRIES', type: 'number', description: 'How often to retry' },
  ],
  request_parameters: [
    { name: 'card.number', type: 'string' },
    { name: 'amount', type: 'number', optional: true },
  ],
  ...overrides,
});
const configuration = { API_KEY: 'sk_test_1', RETRIES: 2 };

describe('reactor formulas and reactors', () => {
  const env = useStack();
  const client = () => env.tenant.client;

  async function createFormula(tenant: TestTenant = env.tenant, overrides: Record<string, unknown> = {}) {
    const response = await tenant.client.request<Formula>('POST', '/reactor-formulas', {
      body: formulaBody(overrides),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body;
  }
  async function createReactor(body: Record<string, unknown>, tenant: TestTenant = env.tenant) {
    const response = await tenant.client.request<Reactor>('POST', '/reactors', { body });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body;
  }

  it('creates, reads, lists, replaces and deletes a formula', async () => {
    const formula = await createFormula();
    expect(formula).toMatchObject({
      tenant_id: env.tenant.tenantId,
      name: 'Charge a card',
      type: 'private',
      code,
      created_by: env.tenant.applicationId,
      request_parameters: [
        { name: 'card.number', type: 'string', optional: false },
        { name: 'amount', type: 'number', optional: true },
      ],
    });
    expect(formula.created_at).toEqual(expect.any(String));
    const read = await client().request<Formula>('GET', `/reactor-formulas/${formula.id}`);
    expect(read.body).toEqual(formula);

    const replaced = await client().request<Formula>('PUT', `/reactor-formulas/${formula.id}`, {
      body: formulaBody({ name: 'Charge v2', configuration: [] }),
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      name: 'Charge v2',
      configuration: [],
      created_at: formula.created_at,
      modified_by: env.tenant.applicationId,
    });
    expect(replaced.body.modified_at).toEqual(expect.any(String));
    expect((await client().request('GET', `/reactor-formulas/${formula.id}`)).body).toEqual(replaced.body);

    const listed = await client().request<Page<Formula>>('GET', '/reactor-formulas', {
      query: { name: 'V2' },
    });
    expect(listed.body.data.map((item) => item.id)).toEqual([formula.id]);

    expect((await client().request('DELETE', `/reactor-formulas/${formula.id}`)).status).toBe(204);
    expect((await client().request('GET', `/reactor-formulas/${formula.id}`)).status).toBe(404);
    expect(
      (await client().request('PUT', `/reactor-formulas/${formula.id}`, { body: formulaBody() })).status,
    ).toBe(404);
    expect((await client().request('DELETE', `/reactor-formulas/${formula.id}`)).status).toBe(404);
  });

  it('refuses code that does not compile at create and at update (422 naming body.code), without running it', async () => {
    const broken = await client().request<Problem>('POST', '/reactor-formulas', {
      body: formulaBody({ code: 'module.exports = function (req) {\n  return {;\n};' }),
    });
    expect(broken.status).toBe(422);
    expect(broken.body.errors?.['body.code']?.[0]).toMatch(/line 2/);
    const formula = await createFormula();
    const update = await client().request<Problem>('PUT', `/reactor-formulas/${formula.id}`, {
      body: formulaBody({ code: 'let = ;' }),
    });
    expect(update.status).toBe(422);
    expect(Object.keys(update.body.errors ?? {})).toEqual(['body.code']);
    // Valid code that would throw if run is accepted: it is parsed only.
    await createFormula(env.tenant, { code: "throw new Error('never run at save');" });
  });

  it('limits code to 50,000 characters', async () => {
    const filler = (length: number) => `//${'x'.repeat(length - 2)}`;
    await createFormula(env.tenant, { code: filler(50_000) });
    const over = await client().request<Problem>('POST', '/reactor-formulas', {
      body: formulaBody({ code: filler(50_001) }),
    });
    expect(over.status).toBe(400);
    expect(Object.keys(over.body.errors ?? {})).toEqual(['body.code']);
  });

  it('validates formula fields and names each wrong one', async () => {
    const response = await client().request<Problem>('POST', '/reactor-formulas', {
      body: {
        name: '',
        type: 'official',
        code: '',
        configuration: [
          { name: 'KEY', type: 'string' },
          { name: 'KEY', type: 'number' },
        ],
        request_parameters: [
          { name: 'x..y', type: 'string' },
          { name: 'z', type: 'date' },
          { name: '__proto__.polluted', type: 'string' },
        ],
        extra: true,
      },
    });
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.errors ?? {}).sort()).toEqual(
      [
        'body.name',
        'body.type',
        'body.code',
        'body.configuration.1.name',
        'body.request_parameters.0.name',
        'body.request_parameters.1.type',
        'body.request_parameters.2.name',
        'body.extra',
      ].sort(),
    );
    const clashes = await client().request<Problem>('POST', '/reactor-formulas', {
      body: formulaBody({
        configuration: [{ name: 'a.b', type: 'string' }],
        request_parameters: [
          { name: 'user', type: 'string' },
          { name: 'user.name', type: 'string' },
          { name: 'card.number', type: 'string' },
          { name: 'card.number', type: 'number' },
        ],
      }),
    });
    expect(clashes.status).toBe(400);
    expect(Object.keys(clashes.body.errors ?? {}).sort()).toEqual([
      'body.configuration.0.name',
      'body.request_parameters.1.name',
      'body.request_parameters.3.name',
    ]);
  });

  it('creates a reactor with its formula embedded and its application, and checks the configuration', async () => {
    const formula = await createFormula();
    const application = await client().applications.create({ name: 'Runner', type: 'private' });
    const reactor = await createReactor({
      name: 'Stripe charges',
      configuration,
      formula: { id: formula.id },
      application: { id: application.id },
    });
    expect(reactor).toMatchObject({
      tenant_id: env.tenant.tenantId,
      name: 'Stripe charges',
      configuration,
      formula,
      application: { id: application.id, name: 'Runner', type: 'private' },
      created_by: env.tenant.applicationId,
    });
    expect((await client().request('GET', `/reactors/${reactor.id}`)).body).toEqual(reactor);

    const wrong = await client().request<Problem>('POST', '/reactors', {
      body: {
        name: 'Wrong',
        configuration: { RETRIES: 'two', UNDECLARED: 1 },
        formula: { id: formula.id },
      },
    });
    expect(wrong.status).toBe(400);
    expect(Object.keys(wrong.body.errors ?? {}).sort()).toEqual([
      'body.configuration.API_KEY',
      'body.configuration.RETRIES',
      'body.configuration.UNDECLARED',
    ]);

    const missingFields = await client().request<Problem>('POST', '/reactors', {
      body: { name: 'x'.repeat(201), formula: {} },
    });
    expect(Object.keys(missingFields.body.errors ?? {}).sort()).toEqual([
      'body.configuration',
      'body.formula.id',
      'body.name',
    ]);

    const management = await client().applications.create({ name: 'Admin', type: 'management' });
    const refused = await client().request<Problem>('POST', '/reactors', {
      body: { name: 'M', configuration, formula: { id: formula.id }, application: { id: management.id } },
    });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.application.id']);

    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const body of [
      { name: 'U', configuration, formula: { id: unknown } },
      { name: 'U', configuration, formula: { id: formula.id }, application: { id: unknown } },
    ]) {
      expect((await client().request('POST', '/reactors', { body })).status).toBe(404);
    }
  });

  it('updates name, configuration and application; the formula cannot change', async () => {
    const formula = await createFormula();
    const other = await createFormula();
    const application = await client().applications.create({ name: 'Public one', type: 'public' });
    const reactor = await createReactor({ name: 'Before', configuration, formula: { id: formula.id } });
    expect(reactor).not.toHaveProperty('application');

    const updated = await client().request<Reactor>('PUT', `/reactors/${reactor.id}`, {
      body: {
        name: 'After',
        configuration: { API_KEY: 'sk_2', RETRIES: 5 },
        application: { id: application.id },
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'After',
      configuration: { API_KEY: 'sk_2', RETRIES: 5 },
      application: { id: application.id, type: 'public' },
      formula: { id: formula.id },
      created_at: reactor.created_at,
      modified_by: env.tenant.applicationId,
    });
    expect(updated.body.modified_at).toEqual(expect.any(String));
    expect((await client().request('GET', `/reactors/${reactor.id}`)).body).toEqual(updated.body);

    const formulaChange = await client().request<Problem>('PUT', `/reactors/${reactor.id}`, {
      body: { name: 'After', configuration, formula: { id: other.id } },
    });
    expect(formulaChange.status).toBe(400);
    expect(Object.keys(formulaChange.body.errors ?? {})).toEqual(['body.formula']);

    const badConfiguration = await client().request<Problem>('PUT', `/reactors/${reactor.id}`, {
      body: { name: 'After', configuration: { API_KEY: 1, RETRIES: 1 } },
    });
    expect(Object.keys(badConfiguration.body.errors ?? {})).toEqual(['body.configuration.API_KEY']);

    // Left out, the application is removed (PUT replaces).
    const detached = await client().request<Reactor>('PUT', `/reactors/${reactor.id}`, {
      body: { name: 'After', configuration },
    });
    expect(detached.body).not.toHaveProperty('application');
  });

  it('a formula in use cannot be deleted (409) until its reactors are', async () => {
    const formula = await createFormula();
    const reactor = await createReactor({ name: 'User', configuration, formula: { id: formula.id } });
    expect((await client().request('DELETE', `/reactor-formulas/${formula.id}`)).status).toBe(409);
    expect((await client().request('DELETE', `/reactors/${reactor.id}`)).status).toBe(204);
    expect((await client().request('GET', `/reactors/${reactor.id}`)).status).toBe(404);
    expect(
      (await client().request('PUT', `/reactors/${reactor.id}`, { body: { name: 'x', configuration } }))
        .status,
    ).toBe(404);
    expect((await client().request('DELETE', `/reactors/${reactor.id}`)).status).toBe(404);
    expect((await client().request('DELETE', `/reactor-formulas/${formula.id}`)).status).toBe(204);
    // A reactor on a deleted formula: 404.
    expect(
      (
        await client().request('POST', '/reactors', {
          body: { name: 'late', configuration, formula: { id: formula.id } },
        })
      ).status,
    ).toBe(404);
  });

  it('lists reactors by page, by repeated id and by name wildcard', async () => {
    const tenant = await env.stack.createTenant('Lists');
    const formula = await createFormula(tenant);
    const names = ['Stripe Charge', 'stripe refund', 'Adyen charge', '100% match'];
    const reactors: Reactor[] = [];
    for (const name of names) {
      reactors.push(await createReactor({ name, configuration, formula: { id: formula.id } }, tenant));
    }
    const list = (query: Record<string, string | number | string[]>) =>
      tenant.client.request<Page<Reactor>>('GET', '/reactors', { query });
    const first = await list({ size: 3 });
    expect(first.body.pagination).toEqual({ total_items: 4, page_number: 1, page_size: 3, total_pages: 2 });
    expect(first.body.data.map((item) => item.name)).toEqual(names.slice(0, 3));
    expect((await list({ size: 3, page: 2 })).body.data.map((item) => item.name)).toEqual([names[3]]);
    expect(first.body.data[0]!.formula.id).toBe(formula.id);

    const byIds = await list({ id: [reactors[0]!.id, reactors[2]!.id] });
    expect(byIds.body.data.map((item) => item.id)).toEqual([reactors[0]!.id, reactors[2]!.id]);
    expect((await list({ id: reactors[1]!.id })).body.data.map((item) => item.id)).toEqual([reactors[1]!.id]);

    const names_ = async (name: string) => (await list({ name })).body.data.map((item) => item.name);
    expect(await names_('stripe*')).toEqual(['Stripe Charge', 'stripe refund']);
    expect(await names_('CHARGE')).toEqual(['Stripe Charge', 'Adyen charge']);
    expect(await names_('*charge')).toEqual(['Stripe Charge', 'Adyen charge']);
    expect(await names_('s*e')).toEqual(['Stripe Charge']);
    expect(await names_('%')).toEqual(['100% match']);
    expect(await names_('_')).toEqual([]);
    expect((await list({ id: 'not-a-uuid' })).status).toBe(400);
  });

  it('needs the reactor permissions', async () => {
    const formula = await createFormula();
    const reactor = await createReactor({ name: 'Guarded', configuration, formula: { id: formula.id } });
    const tokensOnly = await client().applications.create({
      name: 'Tokens only',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:use'],
    });
    const readOnly = await client().applications.create({
      name: 'Reactor reader',
      type: 'private',
      permissions: ['reactor:read'],
    });
    const none = client().withKey(tokensOnly.key);
    const reader = client().withKey(readOnly.key);
    const writes: [string, string, unknown?][] = [
      ['POST', '/reactor-formulas', formulaBody()],
      ['PUT', `/reactor-formulas/${formula.id}`, formulaBody()],
      ['DELETE', `/reactor-formulas/${formula.id}`],
      ['POST', '/reactors', { name: 'x', configuration, formula: { id: formula.id } }],
      ['PUT', `/reactors/${reactor.id}`, { name: 'x', configuration }],
      ['DELETE', `/reactors/${reactor.id}`],
    ];
    const reads = [
      '/reactor-formulas',
      `/reactor-formulas/${formula.id}`,
      '/reactors',
      `/reactors/${reactor.id}`,
    ];
    for (const [method, path, body] of writes) {
      const options = body === undefined ? {} : { body };
      expect((await none.request(method, path, options)).status, `${method} ${path}`).toBe(403);
      expect((await reader.request(method, path, options)).status, `${method} ${path}`).toBe(403);
    }
    for (const path of reads) {
      expect((await none.request('GET', path)).status, path).toBe(403);
      expect((await reader.request('GET', path)).status, path).toBe(200);
    }
  });

  it('never shows or uses another tenant’s formulas, applications or reactors', async () => {
    const other = await env.stack.createTenant('Other');
    const theirFormula = await createFormula(other);
    const theirApplication = await other.client.applications.create({ name: 'Theirs', type: 'private' });
    const theirReactor = await createReactor(
      { name: 'Theirs', configuration, formula: { id: theirFormula.id } },
      other,
    );
    const mine = await createFormula();
    expect((await client().request('GET', `/reactor-formulas/${theirFormula.id}`)).status).toBe(404);
    expect(
      (await client().request('PUT', `/reactor-formulas/${theirFormula.id}`, { body: formulaBody() })).status,
    ).toBe(404);
    expect((await client().request('DELETE', `/reactor-formulas/${theirFormula.id}`)).status).toBe(404);
    expect((await client().request('GET', `/reactors/${theirReactor.id}`)).status).toBe(404);
    expect(
      (await client().request('PUT', `/reactors/${theirReactor.id}`, { body: { name: 'x', configuration } }))
        .status,
    ).toBe(404);
    expect((await client().request('DELETE', `/reactors/${theirReactor.id}`)).status).toBe(404);
    expect(
      (
        await client().request('POST', '/reactors', {
          body: { name: 'x', configuration, formula: { id: theirFormula.id } },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await client().request('POST', '/reactors', {
          body: {
            name: 'x',
            configuration,
            formula: { id: mine.id },
            application: { id: theirApplication.id },
          },
        })
      ).status,
    ).toBe(404);
    const formulas = await client().request<Page<Formula>>('GET', '/reactor-formulas', {
      query: { size: 100 },
    });
    expect(formulas.body.data.every((item) => item.tenant_id === env.tenant.tenantId)).toBe(true);
    expect(formulas.body.data.map((item) => item.id)).not.toContain(theirFormula.id);
    const reactors = await client().request<Page<Reactor>>('GET', '/reactors', {
      query: { size: 100, id: theirReactor.id },
    });
    expect(reactors.body.data).toEqual([]);
    // Still there for their owner.
    expect((await other.client.request('GET', `/reactors/${theirReactor.id}`)).status).toBe(200);
  });

  it('writes audit rows for reactor_formula and reactor create, update and delete', async () => {
    const tenant = await env.stack.createTenant('Audited');
    const formula = await createFormula(tenant);
    await tenant.client.request('PUT', `/reactor-formulas/${formula.id}`, { body: formulaBody() });
    const reactor = await createReactor({ name: 'A', configuration, formula: { id: formula.id } }, tenant);
    await tenant.client.request('PUT', `/reactors/${reactor.id}`, { body: { name: 'B', configuration } });
    await tenant.client.request('DELETE', `/reactors/${reactor.id}`);
    await tenant.client.request('DELETE', `/reactor-formulas/${formula.id}`);
    const rows = await eventually(async () => {
      const logs = await tenant.client.request<
        Page<{ entity_type: string; entity_id: string; operation: string; actor_id?: string }>
      >('GET', '/logs', { query: { size: 100 } });
      const mine = logs.body.data.filter((log) => log.entity_type.startsWith('reactor'));
      expect(mine).toHaveLength(6);
      return mine;
    });
    expect(rows.map((row) => [row.entity_type, row.entity_id, row.operation]).sort()).toEqual(
      [
        ['reactor_formula', formula.id, 'create'],
        ['reactor_formula', formula.id, 'update'],
        ['reactor_formula', formula.id, 'delete'],
        ['reactor', reactor.id, 'create'],
        ['reactor', reactor.id, 'update'],
        ['reactor', reactor.id, 'delete'],
      ].sort(),
    );
    expect(rows.every((row) => row.actor_id === tenant.applicationId)).toBe(true);
    const types = await tenant.client.request<{ value: string }[]>('GET', '/logs/entity-types');
    expect(types.body.map((type) => type.value)).toEqual(
      expect.arrayContaining(['reactor', 'reactor_formula']),
    );
  });

  it('a deleted tenant’s formulas and reactors leave the read models', async () => {
    const tenant = await env.stack.createTenant('Leaving');
    const formula = await createFormula(tenant);
    await createReactor({ name: 'Gone soon', configuration, formula: { id: formula.id } }, tenant);
    expect((await tenant.client.request('DELETE', '/tenants/self')).status).toBe(204);
    const left = await env.stack.service.runtime.ownerPool.query<{ count: number }>(
      `SELECT (SELECT count(*) FROM reactors WHERE tenant_id = $1)
            + (SELECT count(*) FROM reactor_formulas WHERE tenant_id = $1) AS count`,
      [tenant.tenantId],
    );
    expect(left.rows[0]?.count).toBe(0);
    // Its keys are gone: its reads answer 401 before any sealed configuration could be opened.
    expect((await tenant.client.request('GET', '/reactors')).status).toBe(401);
  });
});
