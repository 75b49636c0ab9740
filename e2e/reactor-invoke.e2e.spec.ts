import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import type { Page } from '@tokenvault/sdk';
import { useStack } from './support/stack.ts';
import { createReactor, echoArgs, react } from './support/reactors.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

describe('invoking a reactor: the spec’s ten rules', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('1. matches declared names case-sensitively', async () => {
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'name', type: 'string' }],
    });
    const wrongCase = await react(env.tenant, reactor, { Name: 'Ada' });
    expect(wrongCase.status).toBe(400);
    expect(wrongCase.body.errors).toEqual({ 'body.args.name': ['Required'] });
    expect((await react(env.tenant, reactor, { name: 'Ada' })).body).toEqual({ raw: { name: 'Ada' } });
  });

  it('2. removes undeclared properties before the code sees them', async () => {
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'kept', type: 'string' }],
    });
    const response = await react(env.tenant, reactor, { kept: 'yes', dropped: 'no', nested: { x: 1 } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ raw: { kept: 'yes' } });
  });

  it('3. reads dotted names as nested objects', async () => {
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [
        { name: 'user.address.city', type: 'string' },
        { name: 'user.name', type: 'string', optional: true },
      ],
    });
    const response = await react(env.tenant, reactor, {
      user: { address: { city: 'Paris', zip: '75001' }, name: 'Ada', age: 36 },
    });
    expect(response.body).toEqual({ raw: { user: { address: { city: 'Paris' }, name: 'Ada' } } });
  });

  it('4. rejects a missing required parameter with 400 naming it', async () => {
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [
        { name: 'required', type: 'string' },
        { name: 'optional', type: 'string', optional: true },
      ],
    });
    const response = await react(env.tenant, reactor, { optional: 'here' });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(response.body.errors).toEqual({ 'body.args.required': ['Required'] });
    expect((await react(env.tenant, reactor, { required: 'x' })).body).toEqual({ raw: { required: 'x' } });
  });

  it('5. casts to the declared type where it can, and answers 400 where it cannot', async () => {
    const reactor = await createReactor(env.tenant, {
      code: 'module.exports = async (req) => ({ raw: { amount: req.args.amount, kind: typeof req.args.amount } });',
      request_parameters: [{ name: 'amount', type: 'number' }],
    });
    expect((await react(env.tenant, reactor, { amount: '42' })).body).toEqual({
      raw: { amount: 42, kind: 'number' },
    });
    const wrong = await react(env.tenant, reactor, { amount: 'forty-two' });
    expect(wrong.status).toBe(400);
    expect(Object.keys(wrong.body.errors ?? {})).toEqual(['body.args.amount']);
  });

  it('6. detokenizes {{ token }} expressions, whole values and inside longer strings', async () => {
    const name = await env.tenant.client.tokens.create({ data: 'Ada Lovelace' });
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [
        { name: 'whole', type: 'string' },
        { name: 'greeting', type: 'string' },
      ],
    });
    const response = await react(env.tenant, reactor, {
      whole: `{{ ${name.id} }}`,
      greeting: `Hello, {{${name.id}}}!`,
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ raw: { whole: 'Ada Lovelace', greeting: 'Hello, Ada Lovelace!' } });
  });

  it('7. injects a card token as its whole object, supplying several parameters', async () => {
    const token = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [
        { name: 'card.number', type: 'string' },
        { name: 'card.expiration_month', type: 'number' },
        { name: 'card.expiration_year', type: 'number' },
      ],
    });
    const response = await react(env.tenant, reactor, { card: `{{ ${token.id} }}` });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      raw: { card: { number: card.number, expiration_month: 12, expiration_year: 2030 } },
    });
  });

  it('8. validates after detokenization (a token’s text is cast or refused like a literal)', async () => {
    const numeric = await env.tenant.client.tokens.create({ data: '1250' });
    const text = await env.tenant.client.tokens.create({ data: 'not a number' });
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'amount', type: 'number' }],
    });
    expect((await react(env.tenant, reactor, { amount: `{{ ${numeric.id} }}` })).body).toEqual({
      raw: { amount: 1250 },
    });
    const refused = await react(env.tenant, reactor, { amount: `{{ ${text.id} }}` });
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.args.amount']);
  });

  it('9. detokenizes at most 100 tokens per invocation', async () => {
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'list', type: 'string' }],
    });
    const tokens = await Promise.all(
      Array.from({ length: 100 }, (_, index) => env.tenant.client.tokens.create({ data: `v${index}` })),
    );
    const hundred = tokens.map((token) => `{{${token.id}}}`).join(',');
    const ok = await react(env.tenant, reactor, { list: hundred });
    expect(ok.status).toBe(200);
    expect((ok.body.raw as { list: string }).list.split(',')).toHaveLength(100);
    const tooMany = await react(env.tenant, reactor, { list: `${hundred},{{ one-more-token }}` });
    expect(tooMany.status).toBe(400);
    expect(Object.keys(tooMany.body.errors ?? {})).toEqual(['body.args']);
  });

  it('10. needs token:use to invoke, and on a container of every detokenized token', async () => {
    const secret = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const general = await env.tenant.client.tokens.create({ data: { note: 'general' } });
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'value', type: 'object', optional: true }],
    });
    const withoutUse = await env.tenant.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    expect((await react(env.tenant, reactor, {}, withoutUse.key)).status).toBe(403);
    const generalOnly = await env.tenant.client.applications.create({
      name: 'general user',
      type: 'private',
      permissions: [],
      rules: [{ container: '/general/', permissions: ['token:use'] }],
    });
    expect((await react(env.tenant, reactor, { value: `{{${general.id}}}` }, generalOnly.key)).status).toBe(
      200,
    );
    const denied = await react(env.tenant, reactor, { value: `{{${secret.id}}}` }, generalOnly.key);
    expect(denied.status).toBe(403);
    expect(JSON.stringify(denied.body)).not.toContain(card.number);
    const unknown = await react(env.tenant, reactor, { value: '{{ no-such-token }}' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual({ 'body.args': ['No token with id no-such-token'] });
  });

  it('records each detokenized token as read before the code runs', async () => {
    const token = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const reactor = await createReactor(env.tenant, {
      // The code fails: the read is on record all the same.
      code: 'module.exports = async () => { throw new Error("after the read"); };',
      request_parameters: [{ name: 'card', type: 'object' }],
    });
    expect((await react(env.tenant, reactor, { card: `{{${token.id}}}` })).status).toBe(500);
    await eventually(async () => {
      const logs = await env.tenant.client.request<Page<{ operation: string }>>('GET', '/logs', {
        query: { entity_id: token.id },
      });
      expect(logs.body.data.map((log) => log.operation).sort()).toEqual(['create', 'read']);
    });
  });
});

describe('reactor errors, results and clients', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it.each([
    ['BadRequestError', 400],
    ['InvalidReactorConfigurationError', 400],
    ['AuthenticationError', 401],
    ['AuthorizationError', 403],
    ['RateLimitError', 429],
    ['ReactorRuntimeError', 500],
  ])('maps %s to %i with normalised errors, as a global and from the SDK module', async (name, status) => {
    const asGlobal = await createReactor(env.tenant, {
      code: `module.exports = async () => { throw new ${name}('went wrong', { card: 'is expired' }); };`,
    });
    const fromModule = await createReactor(env.tenant, {
      code: `const sdk = require('@basis-theory/basis-theory-reactor-formulas-sdk-js');
        module.exports = async () => { throw new sdk.${name}('went wrong', ['first', 'second']); };`,
    });
    const thrown = await react(env.tenant, asGlobal);
    expect(thrown.status).toBe(status);
    expect(thrown.headers.get('content-type')).toContain('application/problem+json');
    expect(thrown.body).toMatchObject({ status, detail: 'went wrong', errors: { card: ['is expired'] } });
    const required = await react(env.tenant, fromModule);
    expect(required.status).toBe(status);
    expect(required.body.errors).toEqual({ error: ['first', 'second'] });
  });

  it('answers anything else thrown as a 500 ReactorRuntimeError without host details', async () => {
    const reactor = await createReactor(env.tenant, {
      code: 'module.exports = async () => { null.property; };',
    });
    const response = await react(env.tenant, reactor);
    expect(response.status).toBe(500);
    expect(response.body).toMatchObject({ status: 500 });
    expect(JSON.stringify(response.body)).not.toMatch(/node_modules|\/work\/|at .*\.ts/);
  });

  it('runs asynchronously: 202, pending or done, then the same body the sync call gives', async () => {
    const token = await env.tenant.client.tokens.create({ data: 'async value' });
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'value', type: 'string' }],
    });
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactor}/react-async`,
      { body: { args: { value: `{{${token.id}}}` } } },
    );
    expect(accepted.status).toBe(202);
    const requestId = accepted.body.async_reactor_request_id;
    const result = await eventually(async () => {
      const polled = await env.tenant.client.request<{ status: string; result?: unknown }>(
        'GET',
        `/reactors/${reactor}/results/${requestId}`,
      );
      expect(polled.status).toBe(200);
      expect(polled.body.status).toBe('completed');
      return polled.body;
    });
    expect(result).toEqual({
      async_reactor_request_id: requestId,
      status: 'completed',
      result: { raw: { value: 'async value' } },
    });
    const sync = await react(env.tenant, reactor, { value: `{{${token.id}}}` });
    expect(sync.body).toEqual(result.result);
  });

  it('reports a failed async run with the problem the sync call would answer', async () => {
    const reactor = await createReactor(env.tenant, {
      code: "module.exports = async () => { throw new BadRequestError('no', { amount: 'too high' }); };",
    });
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactor}/react-async`,
      { body: {} },
    );
    const failed = await eventually(async () => {
      const polled = await env.tenant.client.request<{ status: string; error?: Record<string, unknown> }>(
        'GET',
        `/reactors/${reactor}/results/${accepted.body.async_reactor_request_id}`,
      );
      expect(polled.body.status).toBe('failed');
      return polled.body;
    });
    expect(failed.error).toMatchObject({ status: 400, detail: 'no', errors: { amount: ['too high'] } });
    const unknown = await env.tenant.client.request(
      'GET',
      `/reactors/${reactor}/results/00000000-0000-4000-8000-000000000000`,
    );
    expect(unknown.status).toBe(404);
  });

  it('gives req.svc only with an application, acting with that application’s permissions', async () => {
    const code = `module.exports = async (req) => {
      if (req.svc === null) return { raw: { svc: null } };
      const created = await req.svc.tokens.create({ type: 'token', data: req.args.value });
      const read = await req.svc.tokens.retrieve(created.id);
      let deleteError = null;
      try { await req.svc.tokens.delete(created.id); } catch (error) { deleteError = error.message; }
      return { raw: { id: created.id, data: read.data, createdBy: created.created_by, deleteError } };
    };`;
    const parameters = [{ name: 'value', type: 'string' }];
    const without = await createReactor(env.tenant, { code, request_parameters: parameters });
    expect((await react(env.tenant, without, { value: 'x' })).body).toEqual({ raw: { svc: null } });

    const application = await env.tenant.client.applications.create({
      name: 'reactor app',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    });
    const withApp = await createReactor(
      env.tenant,
      { code, request_parameters: parameters },
      {
        applicationId: application.id,
      },
    );
    const response = await react(env.tenant, withApp, { value: 'made by svc' });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const raw = response.body.raw as { id: string; data: string; createdBy: string; deleteError: string };
    expect(raw.data).toBe('made by svc');
    expect(raw.createdBy).toBe(application.id);
    expect(raw.deleteError).toMatch(/token:delete/);
    expect((await env.tenant.client.tokens.get(raw.id)).data).toBe('made by svc');
  });

  it('lets req.svc create, associate, list and dissociate child tokens through the real routes', async () => {
    const application = await env.tenant.client.applications.create({
      name: 'family',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:delete'],
    });
    const parent = await env.tenant.client.tokens.create({ data: 'parent' });
    const adopted = await env.tenant.client.tokens.create({ data: 'adopted' });
    const ids = [
      { name: 'parent', type: 'string' },
      { name: 'adopted', type: 'string' },
    ];
    const builder = await createReactor(
      env.tenant,
      {
        code: `module.exports = async (req) => {
          const child = await req.svc.tokens.createChild(req.args.parent, { type: 'card', data: req.args.card, metadata: { via: 'svc' } });
          const associated = await req.svc.tokens.createAssociation(req.args.parent, req.args.adopted);
          const cards = await req.svc.tokens.listChildren(req.args.parent, { type: 'card' });
          const all = await req.svc.tokens.listChildren(req.args.parent);
          return { raw: { child, associated, cards: cards.data.map((token) => token.id), all: all.data.map((token) => token.id) } };
        };`,
        request_parameters: [...ids, { name: 'card', type: 'object' }],
      },
      { applicationId: application.id },
    );
    const built = await react(env.tenant, builder, { parent: parent.id, adopted: adopted.id, card });
    expect(built.status, JSON.stringify(built.body)).toBe(200);
    const raw = built.body.raw as {
      child: { id: string; type: string; data?: unknown; created_by: string; metadata: object };
      associated: unknown;
      cards: string[];
      all: string[];
    };
    expect(raw.child).toMatchObject({ type: 'card', created_by: application.id, metadata: { via: 'svc' } });
    expect(raw.child).not.toHaveProperty('data');
    expect(raw.associated).toBeNull();
    expect(raw.cards).toEqual([raw.child.id]);
    expect(raw.all.sort()).toEqual([raw.child.id, adopted.id].sort());

    const children = async () =>
      (
        await env.tenant.client.request<Page<{ id: string; data: unknown }>>(
          'GET',
          `/tokens/${parent.id}/children`,
        )
      ).body.data;
    expect((await children()).map((token) => token.id).sort()).toEqual([raw.child.id, adopted.id].sort());
    expect((await env.tenant.client.tokens.get(raw.child.id)).data).toEqual(card);

    const releaser = await createReactor(
      env.tenant,
      {
        code: `module.exports = async (req) => {
          const removed = await req.svc.tokens.deleteAssociation(req.args.parent, req.args.adopted);
          const left = await req.svc.tokens.listChildren(req.args.parent);
          return { raw: { removed, left: left.data.map((token) => token.id) } };
        };`,
        request_parameters: ids,
      },
      { applicationId: application.id },
    );
    const released = await react(env.tenant, releaser, { parent: parent.id, adopted: adopted.id });
    expect(released.body).toEqual({ raw: { removed: null, left: [raw.child.id] } });
    expect((await children()).map((token) => token.id)).toEqual([raw.child.id]);
    // Only the association went: the token itself is still there.
    expect((await env.tenant.client.tokens.get(adopted.id)).data).toBe('adopted');
  });

  it('lets no key bind a reactor to an application holding more than the key itself', async () => {
    const reader = await env.tenant.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read', 'token:create'],
    });
    const builder = await env.tenant.client.applications.create({
      name: 'builder',
      type: 'private',
      permissions: ['reactor:create', 'token:create', 'token:use'],
    });
    const formula = await env.tenant.client.request<{ id: string }>('POST', '/reactor-formulas', {
      body: { name: 'reads', type: 'private', code: echoArgs, configuration: [], request_parameters: [] },
    });
    const bind = (applicationId: string) =>
      env.tenant.client.request<{ errors?: Record<string, string[]> }>('POST', '/reactors', {
        apiKey: builder.key,
        body: {
          name: 'escalation',
          configuration: {},
          formula: { id: formula.body.id },
          application: { id: applicationId },
        },
      });
    const escalated = await bind(reader.id);
    expect(escalated.status).toBe(403);
    expect(escalated.body.errors).toEqual({ 'body.application.id': ['token:read is not held by this key'] });
    const peer = await env.tenant.client.applications.create({
      name: 'peer',
      type: 'private',
      permissions: ['token:create'],
    });
    expect((await bind(peer.id)).status).toBe(201);
  });

  it('lets no key rewrite the code that runs as an application holding more than the key', async () => {
    const reader = await env.tenant.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    const formula = await env.tenant.client.request<{ id: string }>('POST', '/reactor-formulas', {
      body: { name: 'safe', type: 'private', code: echoArgs, configuration: [], request_parameters: [] },
    });
    const bound = await env.tenant.client.request<{ id: string }>('POST', '/reactors', {
      body: {
        name: 'bound',
        configuration: {},
        formula: { id: formula.body.id },
        application: { id: reader.id },
      },
    });
    const editor = await env.tenant.client.applications.create({
      name: 'editor',
      type: 'private',
      permissions: ['reactor:update', 'token:use'],
    });
    const rewritten = await env.tenant.client.request<{ errors?: Record<string, string[]> }>(
      'PUT',
      `/reactor-formulas/${formula.body.id}`,
      {
        apiKey: editor.key,
        body: {
          name: 'safe',
          type: 'private',
          code: 'module.exports = async (req) => ({ raw: await req.svc.tokens.retrieve(req.args.id) });',
          configuration: [],
          request_parameters: [],
        },
      },
    );
    expect(rewritten.status).toBe(403);
    expect(rewritten.body.errors).toEqual({
      'path.id': [`reactor ${bound.body.id}: token:read is not held by this key`],
    });
    const byAdmin = await env.tenant.client.request('PUT', `/reactor-formulas/${formula.body.id}`, {
      body: { name: 'renamed', type: 'private', code: echoArgs, configuration: [], request_parameters: [] },
    });
    expect(byAdmin.status).toBe(200);
  });

  it('turns tokenize into tokens of the same shape, without their data', async () => {
    const application = await env.tenant.client.applications.create({
      name: 'tokenizer',
      type: 'private',
      permissions: ['token:create'],
    });
    const code = `module.exports = async (req) => ({
      raw: { ok: true },
      tokenize: {
        card: { type: 'card', data: req.args.card },
        nested: { note: { data: 'a note', metadata: { kind: 'note' } } },
      },
    });`;
    const parameters = [{ name: 'card', type: 'object' }];
    for (const applicationId of [undefined, application.id]) {
      const reactor = await createReactor(
        env.tenant,
        { code, request_parameters: parameters },
        applicationId ? { applicationId } : {},
      );
      const response = await react(env.tenant, reactor, { card });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const tokens = response.body.tokens as {
        card: { id: string; type: string; data?: unknown; created_by: string };
        nested: { note: { id: string; metadata: Record<string, string>; data?: unknown } };
      };
      expect(response.body.raw).toEqual({ ok: true });
      expect(tokens.card).toMatchObject({ type: 'card', containers: ['/pci/high/'] });
      expect(tokens.card.data).toBeUndefined();
      expect(tokens.nested.note.metadata).toEqual({ kind: 'note' });
      expect(tokens.card.created_by).toBe(applicationId ?? env.tenant.applicationId);
      expect((await env.tenant.client.tokens.get(tokens.card.id)).data).toEqual(card);
    }
    const invalid = await createReactor(env.tenant, {
      code: "module.exports = async () => ({ tokenize: { card: { type: 'card', data: { number: '1' } } } });",
    });
    const refused = await react(env.tenant, invalid);
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body.errors ?? {}).every((field) => field.startsWith('tokenize.card.'))).toBe(
      true,
    );
  });
});

describe('a reactor changed between runs', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  // The gateway keeps the reactors it runs in memory: each change must reach the very next run.
  it('runs its new code, configuration and application at once, and not at all once deleted', async () => {
    const client = env.tenant.client;
    const code = (version: string) => `module.exports = async (req) => ({
      raw: { version: '${version}', greeting: req.configuration.GREETING, svc: req.svc !== null },
    });`;
    const formulaFields = {
      name: 'greeter',
      type: 'private',
      configuration: [{ name: 'GREETING', type: 'string' }],
    };
    const application = await client.applications.create({
      name: 'greeter app',
      type: 'private',
      permissions: ['token:read'],
    });
    const reactorId = await createReactor(
      env.tenant,
      { code: code('v1'), configuration: formulaFields.configuration },
      { configuration: { GREETING: 'hello' }, applicationId: application.id },
    );
    const run = async () => {
      const response = await react(env.tenant, reactorId);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body.raw;
    };
    expect(await run()).toEqual({ version: 'v1', greeting: 'hello', svc: true });
    expect(await run()).toEqual({ version: 'v1', greeting: 'hello', svc: true });

    const reactor = await client.request<{ formula: { id: string } }>('GET', `/reactors/${reactorId}`);
    const replaced = await client.request('PUT', `/reactor-formulas/${reactor.body.formula.id}`, {
      body: { ...formulaFields, code: code('v2'), request_parameters: [] },
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(await run()).toEqual({ version: 'v2', greeting: 'hello', svc: true });

    const updated = await client.request('PUT', `/reactors/${reactorId}`, {
      body: { name: 'reactor', configuration: { GREETING: 'bonjour' }, application: { id: application.id } },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(await run()).toEqual({ version: 'v2', greeting: 'bonjour', svc: true });

    // A deleted application is no longer shown nor used: the reactor runs without one.
    expect((await client.request('DELETE', `/applications/${application.id}`)).status).toBe(204);
    expect(await run()).toEqual({ version: 'v2', greeting: 'bonjour', svc: false });

    expect((await client.request('DELETE', `/reactors/${reactorId}`)).status).toBe(204);
    expect((await react(env.tenant, reactorId)).status).toBe(404);
  });
});

describe('reactors of two tenants', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('never shows one tenant’s reactors, runs, results or tokens to the other', async () => {
    const other = await env.stack.createTenant('Other');
    const otherToken = await other.client.tokens.create({ data: 'theirs' });
    const application = await env.tenant.client.applications.create({
      name: 'svc',
      type: 'private',
      permissions: ['token:read', 'token:create'],
    });
    const reader = await createReactor(
      env.tenant,
      {
        code: `module.exports = async (req) => {
          try { await req.svc.tokens.retrieve(req.args.id); return { raw: 'leaked' }; }
          catch (error) { return { raw: { status: error.status ?? null, message: error.message } }; }
        };`,
        request_parameters: [{ name: 'id', type: 'string' }],
      },
      { applicationId: application.id },
    );
    const viaSvc = await react(env.tenant, reader, { id: otherToken.id });
    expect(viaSvc.status).toBe(200);
    expect(JSON.stringify(viaSvc.body)).not.toContain('leaked');
    expect(JSON.stringify(viaSvc.body)).toMatch(/404|No token/);

    const detokenized = await react(env.tenant, reader, { id: `{{${otherToken.id}}}` });
    expect(detokenized.status).toBe(400);

    expect((await react(other, reader, { id: 'x' })).status).toBe(404);
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reader}/react-async`,
      { body: { args: { id: 'x' } } },
    );
    const result = await other.client.request(
      'GET',
      `/reactors/${reader}/results/${accepted.body.async_reactor_request_id}`,
    );
    expect(result.status).toBe(404);
  });
});

describe('reactor runs waiting for a busy worker', () => {
  // One run at a time, each hanging run holding it for a short wall time: a queue is easy to build.
  const env = useStack({ LOG_LEVEL: 'warn', REACTOR_CONCURRENCY: '1', REACTOR_TIMEOUT_MS: '500' });

  type RunResult = { async_reactor_request_id: string; status: string; result?: unknown; error?: unknown };
  const resultOf = (reactor: string, requestId: string) =>
    env.tenant.client.request<RunResult>('GET', `/reactors/${reactor}/results/${requestId}`);

  /** Queues `count` async runs that each hold the only worker until their wall time ends. */
  const occupyTheWorker = async (count: number) => {
    const reactor = await createReactor(env.tenant, {
      code: 'module.exports = () => new Promise(() => {});',
    });
    const requestIds: string[] = [];
    for (let run = 0; run < count; run++) {
      const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
        'POST',
        `/reactors/${reactor}/react-async`,
        { body: {} },
      );
      expect(accepted.status).toBe(202);
      requestIds.push(accepted.body.async_reactor_request_id);
    }
    return {
      /** Every hanging run has ended, each with the wall-time error. */
      async ended() {
        for (const requestId of requestIds) {
          await eventually(async () => {
            const polled = await resultOf(reactor, requestId);
            expect(polled.body.status).toBe('failed');
            expect(polled.body.error).toMatchObject({
              status: 500,
              detail: expect.stringMatching(/wall time/),
            });
          }, 30_000);
        }
      },
    };
  };

  it('reports an async run as pending while it waits, then completed', async () => {
    const busy = await occupyTheWorker(3);
    const reactor = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'value', type: 'string' }],
    });
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactor}/react-async`,
      { body: { args: { value: 'waited' } } },
    );
    const requestId = accepted.body.async_reactor_request_id;
    const pending = await resultOf(reactor, requestId);
    expect(pending.status).toBe(200);
    expect(pending.body).toEqual({ async_reactor_request_id: requestId, status: 'pending' });
    await busy.ended();
    await eventually(async () =>
      expect((await resultOf(reactor, requestId)).body).toEqual({
        async_reactor_request_id: requestId,
        status: 'completed',
        result: { raw: { value: 'waited' } },
      }),
    );
  });

  it('answers 504 when a sync run cannot finish within REACTOR_TIMEOUT_MS, and drops that run', async () => {
    const application = await env.tenant.client.applications.create({
      name: 'leaves a trace',
      type: 'private',
      permissions: ['token:create'],
    });
    const trace = `run-${Date.now()}`;
    const tracing = await createReactor(
      env.tenant,
      {
        code: 'module.exports = async (req) => ({ raw: await req.svc.tokens.create({ data: 1, metadata: { trace: req.args.trace } }) });',
        request_parameters: [{ name: 'trace', type: 'string' }],
      },
      { applicationId: application.id },
    );
    // Eight runs of 500 ms ahead of it: far more than the 500 ms + 2 s a sync call waits.
    const busy = await occupyTheWorker(8);
    const timedOut = await react(env.tenant, tracing, { trace });
    expect(timedOut.status).toBe(504);
    expect(timedOut.headers.get('content-type')).toContain('application/problem+json');
    expect(timedOut.body.detail).toBe('The reactor did not finish within 500 ms.');

    await busy.ended();
    expect((await env.stack.client.request('GET', '/healthz')).status).toBe(200);
    // The next run is queued behind where the dropped one was: once it has run, that one never will.
    const next = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'after', type: 'string' }],
    });
    expect((await react(env.tenant, next, { after: 'fine' })).body).toEqual({ raw: { after: 'fine' } });
    const traced = await env.tenant.client.request<Page<unknown>>('GET', '/tokens', {
      query: { 'metadata.trace': trace },
    });
    expect(traced.status).toBe(200);
    expect(traced.body.data).toEqual([]);
  });
});
