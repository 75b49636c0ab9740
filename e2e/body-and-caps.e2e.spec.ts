import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

interface ProblemBody {
  status: number;
  errors?: Record<string, string[]>;
}

describe('empty bodies, byte-order marks and repeated query parameters', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const bom = '\uFEFF';

  it('refuses an empty or whitespace-only body naming the body, and changes nothing', async () => {
    const { client } = env.tenant;
    const token = await client.tokens.create({ data: 'kept', metadata: { a: '1' } });
    for (const type of ['application/json', 'application/merge-patch+json']) {
      for (const rawBody of ['', ' ', '\r\n\t ', bom, `${bom}  \n`]) {
        const answer = await client.request<ProblemBody>('PATCH', `/tokens/${token.id}`, {
          rawBody,
          headers: { 'content-type': type },
        });
        expect(answer.status, `${type} ${JSON.stringify(rawBody)}`).toBe(400);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.body.errors).toEqual({ body: ['Required: must not be empty or whitespace only'] });
      }
    }
    // The same on a create: nothing is written.
    const created = await client.request<ProblemBody>('POST', '/tokens', { rawBody: '  ' });
    expect(created.body.errors).toEqual({ body: ['Required: must not be empty or whitespace only'] });
    expect((await client.tokens.get(token.id)).metadata).toEqual({ a: '1' });
    // A route that takes no body still takes an empty one (clients send Content-Type anyway).
    const child = await client.tokens.create({ data: 'child' });
    const associated = await client.request('POST', `/tokens/${token.id}/children/${child.id}`, {
      rawBody: '',
    });
    expect(associated.status).toBe(204);
  });

  it('strips a leading byte-order mark: the body is read as the JSON after it', async () => {
    const { client } = env.tenant;
    const token = await client.tokens.create({ data: 'bom', metadata: { a: '1' } });
    const patched = await client.request<{ metadata: Record<string, string> }>(
      'PATCH',
      `/tokens/${token.id}`,
      {
        rawBody: `${bom}{"metadata":{"a":"2"}}`,
      },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.metadata).toEqual({ a: '2' });
    const created = await client.request<{ id: string }>('POST', '/tokens', {
      rawBody: `${bom}{"data":"with a bom"}`,
    });
    expect(created.status).toBe(201);
    expect((await client.tokens.get(created.body.id)).data).toBe('with a bom');
    // Only one, and only in front: a second one is not JSON.
    const twice = await client.request<ProblemBody>('POST', '/tokens', { rawBody: `${bom}${bom}{"data":1}` });
    expect(twice.status).toBe(400);
    expect(twice.body.errors).toEqual({ body: ['Malformed JSON'] });
  });

  it('answers repeated query parameters past their cap with a 400 naming the cap', async () => {
    const { client, ownerUserId } = env.tenant;
    const parent = await client.tokens.create({ data: 'parent' });
    const ids = (count: number) => Array.from({ length: count }, (_, index) => `t${index}`);
    const atCap = await client.request('GET', `/tokens/${parent.id}/children`, { query: { id: ids(100) } });
    expect(atCap.status).toBe(200);
    for (const count of [101, 1000]) {
      const past = await client.request<ProblemBody>('GET', `/tokens/${parent.id}/children`, {
        query: { id: ids(count) },
      });
      expect(past.status, String(count)).toBe(400);
      expect(past.body.errors).toEqual({ 'query.id': ['At most 100 values'] });
    }
    const members = await client.request<ProblemBody>('GET', '/tenants/self/members', {
      query: { user_id: Array.from({ length: 300 }, () => ownerUserId) },
    });
    expect(members.status).toBe(400);
    expect(members.body.errors).toEqual({ 'query.user_id': ['At most 100 values'] });

    // Each cap is in the OpenAPI document, so a client knows it before it sends.
    const document = (await client.request<OpenApi>('GET', '/openapi.json')).body;
    const caps: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const parameter of operation.parameters ?? []) {
          const repeated = parameter.schema?.anyOf?.find((option) => option.type === 'array');
          if (repeated) caps.push(`${method} ${path} ${parameter.name} ${repeated.maxItems}`);
        }
      }
    }
    expect(caps).toEqual(
      expect.arrayContaining([
        'get /tokens/{parent_id}/children id 100',
        'get /tenants/self/members user_id 100',
        'get /v2/tokens type 100',
      ]),
    );
    expect(caps.filter((cap) => !cap.endsWith(' 100'))).toEqual([]);
  });
});

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      { parameters?: { name: string; schema?: { anyOf?: { type?: string; maxItems?: number }[] } }[] }
    >
  >;
}
