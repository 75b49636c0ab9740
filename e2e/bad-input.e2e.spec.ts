import { describe, expect, it } from 'vitest';
import { type TestStack, type TestTenant, eventCount, useStack } from './support/stack.ts';

interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: Record<string, string[]>;
}

describe('bad input', () => {
  const env = useStack({ BODY_LIMIT: '16kb' });

  const cases: {
    name: string;
    status: number;
    fields?: string[];
    send(t: TestTenant, s: TestStack): Promise<{ status: number; body: unknown; headers: Headers }>;
  }[] = [
    {
      name: 'malformed JSON',
      status: 400,
      fields: ['body'],
      send: (t) => t.client.request('POST', '/tokens', { rawBody: '{"data": ' }),
    },
    {
      name: 'a JSON body that is not an object',
      status: 400,
      fields: ['body'],
      send: (t) => t.client.request('POST', '/tokens', { rawBody: '[1,2]' }),
    },
    { name: 'no body', status: 400, fields: ['body'], send: (t) => t.client.request('POST', '/tokens') },
    {
      name: 'a missing field',
      status: 400,
      fields: ['body.data'],
      send: (t) => t.client.request('POST', '/tokens', { body: { type: 'token' } }),
    },
    {
      name: 'wrong types',
      status: 400,
      fields: ['body.type', 'body.metadata.n', 'body.containers'],
      send: (t) =>
        t.client.request('POST', '/tokens', {
          body: { type: 7, data: 1, metadata: { n: 1 }, containers: '/a/' },
        }),
    },
    {
      name: 'an unknown field',
      status: 400,
      fields: ['body.colour'],
      send: (t) => t.client.request('POST', '/tokens', { body: { data: 1, colour: 'red' } }),
    },
    {
      name: 'a null data',
      status: 400,
      fields: ['body.data'],
      send: (t) => t.client.request('POST', '/tokens', { body: { data: null } }),
    },
    {
      name: 'an id with illegal characters',
      status: 400,
      fields: ['body.id'],
      send: (t) => t.client.request('POST', '/tokens', { body: { id: 'a b/c', data: 1 } }),
    },
    {
      name: 'a past expiry',
      status: 400,
      fields: ['body.expires_at'],
      send: (t) =>
        t.client.request('POST', '/tokens', { body: { data: 1, expires_at: '2001-01-01T00:00:00Z' } }),
    },
    {
      name: 'an oversize body',
      status: 413,
      send: (t) => t.client.request('POST', '/tokens', { body: { data: 'x'.repeat(20_000) } }),
    },
    {
      name: 'a non-UUID application id',
      status: 400,
      fields: ['path.id'],
      send: (t) => t.client.request('GET', '/applications/not-a-uuid'),
    },
    {
      name: 'a non-UUID id on delete',
      status: 400,
      fields: ['path.id'],
      send: (t) => t.client.request('DELETE', '/applications/123'),
    },
    {
      name: 'a page size too large',
      status: 400,
      fields: ['query.size'],
      send: (t) => t.client.request('GET', '/applications', { query: { size: 101 } }),
    },
    {
      name: 'a page of zero',
      status: 400,
      fields: ['query.page'],
      send: (t) => t.client.request('GET', '/applications', { query: { page: 0 } }),
    },
    {
      name: 'a missing key',
      status: 401,
      send: (t) => t.client.request('POST', '/tokens', { body: { data: 1 }, apiKey: null }),
    },
    {
      name: 'an unknown key',
      status: 401,
      send: (t) =>
        t.client.request('POST', '/tokens', { body: { data: 1 }, apiKey: `tv_mgt_${'A'.repeat(43)}` }),
    },
    {
      name: 'garbage as a key',
      status: 401,
      send: (t) => t.client.request('GET', '/tokens/x', { apiKey: 'let me in' }),
    },
    { name: 'an unknown route', status: 404, send: (t) => t.client.request('GET', '/nothing/here') },
  ];

  for (const testCase of cases) {
    it(`${testCase.name}: ${testCase.status} problem+json, and nothing appended`, async () => {
      const before = await eventCount(env.stack);
      const response = await testCase.send(env.tenant, env.stack);
      expect(response.status).toBe(testCase.status);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      const body = response.body as ProblemBody;
      expect(body).toMatchObject({
        status: testCase.status,
        type: expect.stringMatching(/^https:\/\//),
        title: expect.any(String),
      });
      if (testCase.fields) expect(Object.keys(body.errors ?? {}).sort()).toEqual([...testCase.fields].sort());
      expect(await eventCount(env.stack)).toBe(before);
    });
  }

  it('a known key without the permission: 403, and nothing appended', async () => {
    const readOnly = await env.tenant.client.applications.create({
      name: 'read only',
      type: 'private',
      permissions: ['token:read'],
    });
    const before = await eventCount(env.stack);
    const response = await env.tenant.client
      .withKey(readOnly.key)
      .request<ProblemBody>('POST', '/tokens', { body: { data: 1 } });
    expect(response.status).toBe(403);
    expect(response.body.detail).toContain('token:create');
    expect(await eventCount(env.stack)).toBe(before);
  });
});
