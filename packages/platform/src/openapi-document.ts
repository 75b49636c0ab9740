import { z } from 'zod';
import { bodyMayBeLeftOut, type RouteDefinition } from './route.ts';

/** The 4xx answers an operation may give besides its own statuses, each a problem+json. */
const problemResponses = {
  400: 'The input is not valid: the problem names each field (`errors`).',
  401: 'No API key, or one that is not valid.',
  403: 'The API key lacks the permission.',
  404: 'No such resource in the tenant.',
} as const;

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

export interface OpenApiInfo {
  title: string;
  version: string;
  /** The address clients reach the service at (PUBLIC_URL). */
  serverUrl: string;
}

/** An OpenAPI 3.1 document built from the same zod schemas that validate the requests. */
export function buildOpenApiDocument(routes: RouteDefinition[], info: OpenApiInfo) {
  const paths: Record<string, Record<string, unknown>> = {};
  const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
    z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const [location, schema] of [
      ['path', route.params],
      ['query', route.query],
    ] as const) {
      if (!schema) continue;
      for (const [name, field] of Object.entries(schema.shape)) {
        parameters.push({
          name,
          in: location,
          required: location === 'path' || !(field as z.ZodType).safeParse(undefined).success,
          schema: jsonSchema(field as z.ZodType, 'input'),
        });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      responses[status] = {
        description: response.description,
        ...(response.schema
          ? { content: { 'application/json': { schema: jsonSchema(response.schema, 'output') } } }
          : {}),
      };
    }
    // The 4xx answers that can happen to this operation, then any other error.
    // Every operation screens its query (NUL, lone surrogates), so each may answer a 400.
    const errors: (keyof typeof problemResponses)[] = [400];
    if (route.permission) errors.push(401, 403);
    if (route.params) errors.push(404);
    // Each its own object: the route guard's description adds headers per operation.
    for (const status of errors) responses[status] ??= problemResponse(problemResponses[status]);
    responses.default = problemResponse('An error (RFC 9457 problem details).');
    const body = route.body;
    (paths[path] ??= {})[route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      // What its responses can hold that nothing keeps (the route's returnsSensitive).
      ...(route.returnsSensitive.length > 0 ? { 'x-returns-sensitive': [...route.returnsSensitive] } : {}),
      ...(route.permission
        ? {
            'x-permission': route.permission,
            security: [{ apiKey: [] }, { sessionBearer: [] }, { sessionCookie: [] }],
          }
        : { security: [] }),
      ...(parameters.length ? { parameters } : {}),
      ...(body
        ? {
            requestBody: {
              required: !bodyMayBeLeftOut(route),
              content: Object.fromEntries(
                (route.bodyMediaTypes ?? ['application/json']).map((type) => [
                  type,
                  { schema: jsonSchema(body, 'input') },
                ]),
              ),
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: info.serverUrl }],
    tags: [...new Set(routes.map((route) => route.tag))].map((name) => ({
      name,
      description: `${name} operations.`,
    })),
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'SVC-API-KEY' },
        // A member's session (POST /sessions): add SVC-TENANT-ID when the user has several tenants.
        sessionBearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A session token from POST /sessions. With several memberships, SVC-TENANT-ID names the tenant.',
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'tv_session',
          description: "The console's session cookie; unsafe methods must come from the same origin.",
        },
      },
      schemas: {
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string', format: 'uri' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
            request_id: { type: 'string' },
          },
        },
      },
    },
  };
}
