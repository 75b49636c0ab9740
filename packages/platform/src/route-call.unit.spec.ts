import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApiDocument } from './openapi-document.ts';
import { describeOperations } from './openapi-examples.ts';
import { callRoute } from './route-call.ts';
import { anyCaller, defineRoute, type Principal } from './route.ts';
import { problemRejectedBy } from './testing.ts';

/** An application of a tenant holding `permissions` tenant-wide. */
const holding = (...permissions: string[]): Principal => ({
  tenantId: 'tenant',
  actorId: 'application',
  actorType: 'application',
  permissions: new Set(permissions),
  rules: [],
  tenantSettings: {},
});

const echo = (permission: string, body?: z.ZodType) =>
  defineRoute({
    method: 'post',
    path: '/echo',
    operationId: 'createEcho',
    summary: 'Echo',
    tag: 'Test',
    permission,
    returnsSensitive: [],
    ...(body ? { body } : {}),
    responses: { 200: { description: 'The body' } },
    handle: async ({ body: given }) => ({ status: 200, body: { given: given ?? null } }),
  });

describe('callRoute', () => {
  it('runs a route of anyCaller for a caller holding nothing, and refuses a route’s permission not held (403)', async () => {
    expect(await callRoute(echo(anyCaller), {}, holding(), 'r')).toEqual({
      status: 200,
      body: { given: null },
    });
    const refused = await problemRejectedBy(() =>
      callRoute(echo('token:read'), {}, holding('token:create'), 'r'),
    );
    expect(refused.status).toBe(403);
    // No permission is named like anyCaller: holding it grants nothing elsewhere.
    expect(await callRoute(echo('token:read'), {}, holding('token:read'), 'r')).toMatchObject({
      status: 200,
    });
  });

  it('lets a body the schema makes optional be left out, and still checks one that is sent', async () => {
    const optional = echo(anyCaller, z.strictObject({ note: z.string() }).optional());
    expect(await callRoute(optional, {}, holding(), 'r')).toEqual({ status: 200, body: { given: null } });
    expect(await callRoute(optional, { body: { note: 'x' } }, holding(), 'r')).toEqual({
      status: 200,
      body: { given: { note: 'x' } },
    });
    const malformed = await problemRejectedBy(() =>
      callRoute(optional, { body: { note: 1 } }, holding(), 'r'),
    );
    expect(malformed.errors).toHaveProperty(['body.note']);
    const required = echo(anyCaller, z.strictObject({ note: z.string() }));
    const missing = await problemRejectedBy(() => callRoute(required, {}, holding(), 'r'));
    expect(missing.errors).toEqual({ body: ['Required'] });
  });
});

describe('the OpenAPI document of such routes', () => {
  it('marks an optional body as not required, and names anyCaller as the permission, saying any key will do', () => {
    const document = describeOperations(
      buildOpenApiDocument(
        [
          echo(anyCaller, z.strictObject({ note: z.string() }).optional()),
          { ...echo('token:read', z.strictObject({ note: z.string() })), path: '/required' },
        ],
        { title: 'Test', version: '1', serverUrl: 'http://localhost' },
      ),
    ) as unknown as {
      paths: Record<
        string,
        { post: { requestBody: { required: boolean }; description: string; 'x-permission': string } }
      >;
    };
    const optional = document.paths['/echo']!.post;
    expect(optional.requestBody.required).toBe(false);
    expect(optional['x-permission']).toBe(anyCaller);
    expect(optional.description).toMatch(/^Permission: `authenticated` \(any API key, whatever it holds\)\./);
    expect(document.paths['/required']!.post.requestBody.required).toBe(true);
  });
});
