import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReactor } from './support/reactors.ts';
import { useStack } from './support/stack.ts';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';

/*
 * The most common mistake of each route family, made as a newcomer makes it: each answer must
 * name the field (`body.x`, `query.x`, a header) and say how to fix it, not only that it is wrong.
 */
interface ProblemBody {
  status: number;
  detail?: string;
  errors?: Record<string, string[]>;
}

const card = { number: '4242424242424242', expiration_month: 4, expiration_year: 2029, cvc: '123' };

describe('errors that teach', () => {
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let destination: TestDestination;

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
  });
  afterAll(async () => destination?.close());

  const call = (
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string> } = {},
  ) =>
    fetch(`${env.stack.url}${path}`, {
      method,
      headers: {
        'svc-api-key': env.tenant.apiKey,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as ProblemBody }));

  it('tokens: a type that does not exist lists the valid types (body and query alike)', async () => {
    const created = await call('POST', '/tokens', { body: { type: 'cards', data: card } });
    expect(created.status).toBe(400);
    expect(created.body.errors?.['body.type']).toEqual([
      expect.stringMatching(/^Must be one of: .*"card".*"bank"/),
    ]);

    const listed = await call('GET', '/tokens?type=cards');
    expect(listed.status).toBe(400);
    expect(listed.body.errors?.['query.type']).toEqual([
      expect.stringMatching(/^Must be one of: .*"card".*"bank"/),
    ]);
    const several = await call('GET', '/tokens?type=card&type=banks');
    expect(several.body.errors?.['query.type']).toEqual([expect.stringMatching(/^Must be one of: .*"bank"/)]);
  });

  it('tokens: a missing field is named and Required', async () => {
    const missing = await call('POST', '/tokens', { body: { type: 'card' } });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toMatchObject({ 'body.data': ['Required'] });
  });

  it('authentication: an API key sent as Authorization: Bearer is told to use SVC-API-KEY', async () => {
    const response = await fetch(`${env.stack.url}/tokens`, {
      headers: { authorization: `Bearer ${env.tenant.apiKey}` },
    });
    expect(response.status).toBe(401);
    const body = (await response.json()) as ProblemBody;
    expect(body.detail).toContain('SVC-API-KEY');
    expect(body.detail).not.toMatch(/sign in again/);
    expect(body.errors).toEqual({ 'headers.authorization': ['Send the API key as SVC-API-KEY instead'] });
    expect(JSON.stringify(body)).not.toContain(env.tenant.apiKey);
  });

  it('applications: an unknown application type lists the valid ones', async () => {
    const response = await call('POST', '/applications', {
      body: { name: 'Checkout', type: 'server', permissions: ['token:create'] },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors?.['body.type']).toEqual([
      expect.stringMatching(/^Must be one of: .*"private".*"public".*"management"/),
    ]);
  });

  it('proxy: a private destination names PROXY_ALLOWED_PRIVATE_ADDRESSES, for the call and for a configured proxy', async () => {
    const invoked = await call('POST', '/proxy/charges', {
      headers: { 'svc-proxy-url': 'http://10.0.0.7:9000/v1' },
      body: { amount: 1 },
    });
    expect(invoked.status).toBe(400);
    expect(invoked.body.errors?.['SVC-PROXY-URL']).toEqual([
      'Resolves to a private address, which is not allowed unless the operator lists it in PROXY_ALLOWED_PRIVATE_ADDRESSES',
    ]);
    const configured = await call('POST', '/proxies', {
      body: { name: 'Processor', destination_url: 'http://169.254.169.254/latest' },
    });
    expect(configured.status).toBe(400);
    expect(configured.body.errors?.['body.destination_url']?.[0]).toContain(
      'PROXY_ALLOWED_PRIVATE_ADDRESSES',
    );
  });

  it('proxy: an expression error in a JSON body is named body.<field>, like every other error', async () => {
    const token = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const response = await call('POST', '/proxy/charges', {
      headers: { 'svc-proxy-url': `${destination.url}/v1` },
      body: { payment: { pan: `{{ ${token.id} | no_such_filter }}` }, note: '{{ oops' },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual({
      'body.payment.pan': ['Unknown filter no_such_filter'],
      'body.note': ['Expression syntax error at character 1: "{{ oops" has no closing }}'],
    });
  });

  it('reactors: an expression missing }} is a syntax error at its position, not a missing parameter', async () => {
    const reactorId = await createReactor(env.tenant, {
      code: 'module.exports = async (req) => ({ raw: req.args.card.number.slice(-4) });',
      request_parameters: [{ name: 'card', type: 'object' }],
    });
    const token = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const response = await call('POST', `/reactors/${reactorId}/react`, {
      body: { args: { card: `{{ ${token.id} ` } },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual({
      'body.args.card': [`Expression syntax error at character 1: "{{ ${token.id} " has no closing }}`],
    });
  });
});
