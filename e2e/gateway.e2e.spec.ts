import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack } from './support/stack.ts';

describe('gateway', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it('answers health and readiness (PostgreSQL and Redis checked)', async () => {
    expect(await stack.client.request('GET', '/healthz')).toMatchObject({
      status: 200,
      body: { status: 'ok' },
    });
    expect(await stack.client.request('GET', '/readyz')).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok' } },
    });
  });

  it('tags every response with a request id, keeping a sane incoming one', async () => {
    const generated = await stack.client.request('GET', '/healthz');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await stack.client.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const replaced = await stack.client.request('GET', '/healthz', {
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(replaced.headers.get('x-request-id')).not.toBe('bad id with spaces');
    const problem = await stack.client.request<{ request_id: string }>('GET', '/tokens/x', {
      headers: { 'x-request-id': 'trace-456' },
    });
    expect(problem.body.request_id).toBe('trace-456');
  });

  it('serves an OpenAPI 3.1 document built from the validating schemas', async () => {
    const { status, body } = await stack.client.request<{
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: {
              content: Record<
                string,
                { schema: { properties: Record<string, unknown>; required: string[] } }
              >;
            };
            parameters?: { name: string; in: string }[];
            'x-permission'?: string;
          }
        >
      >;
    }>('GET', '/openapi.json');
    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
    expect(Object.keys(body.paths).sort()).toEqual([
      '/.well-known/tokenvault-log-key',
      '/applications',
      '/applications/key',
      '/applications/{id}',
      '/applications/{id}/keys',
      '/applications/{id}/keys/{key_id}',
      '/detokenize',
      '/logs',
      '/logs/entity-types',
      '/logs/{id}/proof',
      '/permissions',
      '/ping',
      '/proxies',
      '/proxies/{id}',
      '/proxy/{path}',
      '/reactor-formulas',
      '/reactor-formulas/{id}',
      '/reactors',
      '/reactors/{id}',
      '/reactors/{id}/react',
      '/reactors/{id}/react-async',
      '/reactors/{id}/results/{request_id}',
      '/sessions',
      '/sessions/email',
      '/sessions/self',
      '/tenants/invitations/accept',
      '/tenants/invitations/link',
      '/tenants/self',
      '/tenants/self/invitations',
      '/tenants/self/invitations/{id}',
      '/tenants/self/invitations/{id}/resend',
      '/tenants/self/members',
      '/tenants/self/members/{id}',
      '/tenants/self/reports/usage',
      '/token-intents',
      '/token-intents/{id}',
      '/tokenize',
      '/tokens',
      '/tokens/search',
      '/tokens/{id}',
      '/tokens/{parent_id}/children',
      '/tokens/{parent_id}/children/{child_id}',
      '/v2/tokens',
      '/v2/tokens/search',
      '/webhooks',
      '/webhooks/event-types',
      '/webhooks/signing-key',
      '/webhooks/signing-key/rotate',
      '/webhooks/{id}',
      '/webhooks/{id}/deliveries',
      '/webhooks/{id}/deliveries/{delivery_id}/redeliver',
      '/webhooks/{id}/ping',
    ]);
    const createToken = body.paths['/tokens']?.post;
    const schema = createToken?.requestBody?.content['application/json']?.schema;
    expect(Object.keys(schema?.properties ?? {}).sort()).toEqual(
      [
        'containers',
        'data',
        'deduplicate_token',
        'expires_at',
        'fingerprint_expression',
        'id',
        'mask',
        'metadata',
        'privacy',
        'search_indexes',
        'token_intent_id',
        'type',
      ].sort(),
    );
    // data, or token_intent_id (the token takes the intent's data): neither is required alone.
    expect(schema?.required).toBeUndefined();
    expect(createToken?.['x-permission']).toBe('token:create');
    expect(body.paths['/applications/{id}']?.get?.parameters).toEqual([
      expect.objectContaining({ name: 'id', in: 'path' }),
    ]);
  });
});
