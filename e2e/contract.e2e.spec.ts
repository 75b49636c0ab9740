import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { operationIdPattern } from '@tokenvault/platform';
import { createTokenvaultApi } from '@tokenvault/sdk';
import { useStack } from './support/stack.ts';
import { createReactor, echoArgs } from './support/reactors.ts';

interface MediaType {
  schema?: object;
  example?: unknown;
}
interface Operation {
  operationId?: string;
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { $ref?: string; content?: Record<string, MediaType> }>;
}
interface Document {
  info: { license?: { name: string; identifier?: string } };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, unknown>;
}

const checkedIn = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('@tokenvault/sdk/openapi.json'), 'utf8'),
) as Document;

describe('the API contract: GET /openapi.json and the SDK generated from it', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const served = async () => (await env.stack.client.request<Document>('GET', '/openapi.json')).body;
  const operations = (document: Document) =>
    Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ name: `${method} ${path}`, operation })),
    );

  it('serves the checked-in packages/sdk/openapi.json, its servers from PUBLIC_URL (else: npm run sdk:generate)', async () => {
    const document = await served();
    expect(document.servers).toEqual([{ url: env.stack.config.PUBLIC_URL }]);
    expect({ ...document, servers: checkedIn.servers }).toEqual(checkedIn);
    expect(document.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
  });

  it('names every operation by the rule, once, and gives each a 4xx', async () => {
    const all = operations(await served());
    expect(all.length).toBeGreaterThan(40);
    const ids = all.map(({ operation }) => operation.operationId);
    for (const [index, id] of ids.entries()) expect(id, all[index]!.name).toMatch(operationIdPattern);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { name, operation } of all) {
      expect(
        Object.keys(operation.responses).filter((status) => /^4\d\d$/.test(status)),
        name,
      ).not.toEqual([]);
    }
  });

  it('has every example valid against its own schema', async () => {
    const document = await served();
    // Formats are not checked (the pattern, type and every other keyword are).
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    let checked = 0;
    const check = (where: string, media: MediaType) => {
      if (media.example === undefined || !media.schema) return;
      // The schema inside a copy of the components, so its #/components/… refs resolve.
      const validate = ajv.compile({ ...media.schema, components: document.components });
      expect(validate(media.example) ? [] : validate.errors, where).toEqual([]);
      checked++;
    };
    for (const { name, operation } of operations(document)) {
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
        check(`${name} request ${type}`, media);
      }
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          check(`${name} ${status} ${type}`, media);
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('runs tokens, children, an invitation and a reactor through the generated SDK', async () => {
    const api = createTokenvaultApi({ baseUrl: env.stack.url, apiKey: env.tenant.apiKey });
    const parent = await api.POST('/tokens', { body: { data: { name: 'Ada' }, metadata: { a: '1' } } });
    expect(parent.response.status).toBe(201);
    const parentId = parent.data!.id;
    const read = await api.GET('/tokens/{id}', { params: { path: { id: parentId } } });
    expect(read.data).toMatchObject({ id: parentId, data: { name: 'Ada' }, metadata: { a: '1' } });
    const child = await api.POST('/tokens/{parent_id}/children', {
      params: { path: { parent_id: parentId } },
      body: {
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
      },
    });
    expect(child.response.status).toBe(201);
    const children = await api.GET('/tokens/{parent_id}/children', {
      params: { path: { parent_id: parentId }, query: { type: ['card'] } },
    });
    expect(children.data?.data.map((token) => token.id)).toEqual([child.data!.id]);

    // An error is the problem+json, typed.
    const missing = await api.GET('/tokens/{id}', { params: { path: { id: 'no-such-token' } } });
    expect(missing.data).toBeUndefined();
    expect(missing.error).toMatchObject({ status: 404, title: 'Not Found' });
    const refused = await api.POST('/tokens', { body: { data: null } });
    expect(refused.error?.errors).toEqual({ 'body.data': ['Must not be null'] });
    // No key: the operations that need none still work, the others answer 401.
    const anonymous = createTokenvaultApi({ baseUrl: env.stack.url });
    expect((await anonymous.GET('/tokens/{id}', { params: { path: { id: parentId } } })).error?.status).toBe(
      401,
    );

    const invitation = await api.POST('/tenants/self/invitations', { body: { email: 'sdk@example.com' } });
    expect(invitation.response.status).toBe(201);
    const invitationId = invitation.data!.id;
    const listed = await api.GET('/tenants/self/invitations/{id}', {
      params: { path: { id: invitationId } },
    });
    expect(listed.data).toMatchObject({ id: invitationId, email: 'sdk@example.com', status: 'PENDING' });
    const deleted = await api.DELETE('/tenants/self/invitations/{id}', {
      params: { path: { id: invitationId } },
    });
    expect(deleted.response.status).toBe(204);

    const reactorId = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'card', type: 'object' }],
    });
    const reacted = await api.POST('/reactors/{id}/react', {
      params: { path: { id: reactorId } },
      body: { args: { card: `{{ ${child.data!.id} }}` } },
    });
    expect(reacted.error).toBeUndefined();
    expect(reacted.data).toEqual({
      raw: { card: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 } },
    });
  });
});
