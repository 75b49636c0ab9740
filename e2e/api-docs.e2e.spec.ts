import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

interface Operation {
  summary: string;
  description?: string;
  'x-permission'?: string;
  'x-returns-sensitive'?: string[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { content?: Record<string, { example?: unknown }> }>;
}

describe('GET /docs: the API reference', () => {
  const env = useStack();

  it('is an HTML page whose scripts and styles all come from the service, under a strict CSP', async () => {
    const response = await fetch(`${env.stack.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html; charset=utf-8/);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await response.text();
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(assets.every((asset) => asset.startsWith('/'))).toBe(true); // nothing from another origin
    const expected: Record<string, RegExp> = {
      '/docs/assets/swagger-ui-bundle.js': /^text\/javascript/,
      '/docs/assets/docs.js': /^text\/javascript/,
      '/docs/assets/swagger-ui.css': /^text\/css/,
      '/docs/assets/docs.css': /^text\/css/,
      '/docs/assets/favicon-32x32.png': /^image\/png/,
      '/openapi.json': /^application\/json/,
    };
    expect(assets.filter((asset) => asset !== '/openapi.json').sort()).toEqual(
      Object.keys(expected)
        .filter((asset) => asset !== '/openapi.json')
        .sort(),
    );
    for (const [path, type] of Object.entries(expected)) {
      const asset = await fetch(`${env.stack.url}${path}`);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('content-type'), path).toMatch(type);
      expect((await asset.arrayBuffer()).byteLength, path).toBeGreaterThan(20);
    }
    const bundle = await (await fetch(`${env.stack.url}/docs/assets/swagger-ui-bundle.js`)).text();
    expect(bundle).toContain('SwaggerUIBundle');
    expect((await fetch(`${env.stack.url}/docs/assets/..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${env.stack.url}/docs/assets/index.html`)).status).toBe(404);
  });

  it('documents every operation with its permission and example bodies', async () => {
    const document = (await (await fetch(`${env.stack.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    let operations = 0;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        operations++;
        const where = `${method} ${path}`;
        const permission = operation['x-permission'];
        expect(operation.description, where).toMatch(
          permission ? new RegExp(`^Permission: \`${permission}\``) : /^No API key needed\./,
        );
        const request = operation.requestBody?.content['application/json'];
        if (request) expect(request.example, where).toBeDefined();
        for (const [status, response] of Object.entries(operation.responses)) {
          const json = response.content?.['application/json'];
          if (json) expect(json.example, `${where} ${status}`).toBeDefined();
        }
      }
    }
    expect(operations).toBeGreaterThan(30);
    // Every $ref points into the document itself (viewers resolve them from its root).
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of new Set(refs)) {
      expect(ref, ref).toMatch(/^#\//);
      const target = ref
        .slice(2)
        .split('/')
        .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], document);
      expect(target, ref).toBeTypeOf('object');
    }
    const createToken = document.paths['/tokens']!.post!;
    expect(createToken.description).toMatch(/^Permission: `token:create`/);
    expect(createToken.requestBody!.content['application/json']!.example).toMatchObject({
      type: 'card',
      data: { number: '4242424242424242' },
    });
  });

  it('describes what every API-key operation may also answer: rate limits and Idempotency-Key', async () => {
    const document = (await (await fetch(`${env.stack.url}/openapi.json`)).json()) as Record<
      string,
      unknown
    > & {
      paths: Record<string, Record<string, Operation & { parameters?: unknown[] }>>;
    };
    const resolve = <T>(node: unknown): T => {
      const ref = (node as { $ref?: string }).$ref;
      if (ref === undefined) return node as T;
      return ref
        .slice(2)
        .split('/')
        .reduce<unknown>((inner, key) => (inner as Record<string, unknown>)[key], document) as T;
    };
    type Response = { headers?: Record<string, unknown> };
    const headersOf = (response: unknown) => Object.keys(resolve<Response>(response).headers ?? {});
    const headerParameters = (operation: { parameters?: unknown[] }) =>
      (operation.parameters ?? [])
        .map((parameter) => resolve<{ name: string; in: string }>(parameter))
        .filter((parameter) => parameter.in === 'header')
        .map((parameter) => parameter.name);
    let idempotent = 0;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const where = `${method} ${path}`;
        if (operation['x-permission'] === undefined) {
          // The sign-in e-mail has caps of its own (per address and client), not a key's quota.
          if (where !== 'post /sessions/email') expect(operation.responses['429'], where).toBeUndefined();
          expect(headerParameters(operation), where).toEqual([]);
          continue;
        }
        for (const [status, response] of Object.entries(operation.responses)) {
          expect(headersOf(response), `${where} ${status}`).toEqual(
            expect.arrayContaining(['RateLimit-Policy', 'RateLimit']),
          );
        }
        expect(headersOf(operation.responses['429']), where).toContain('Retry-After');
        if (!['post', 'put', 'patch'].includes(method)) {
          expect(headerParameters(operation), where).toEqual([]);
          continue;
        }
        idempotent++;
        expect(headerParameters(operation), where).toEqual(['Idempotency-Key', 'SVC-IDEMPOTENCY-KEY']);
        const success = Object.entries(operation.responses).find(([status]) => status.startsWith('2'));
        // An operation whose answers can hold token data or a secret never replays one: a 409
        // says so, and its Idempotency-Key parameter says why.
        // A token write (`token-summary` only) is replayed without its tokens' summaries and
        // fingerprints, and says which fields it withheld.
        const returns = operation['x-returns-sensitive'] ?? [];
        const summariesOnly = returns.length > 0 && returns.every((kind) => kind === 'token-summary');
        const withheld = returns.length > 0 && !summariesOnly;
        if (withheld) expect(headersOf(success![1]), where).not.toContain('Idempotency-Replayed');
        else expect(headersOf(success![1]), where).toContain('Idempotency-Replayed');
        if (summariesOnly) expect(headersOf(success![1]), where).toContain('Idempotency-Withheld-Fields');
        else expect(headersOf(success![1]), where).not.toContain('Idempotency-Withheld-Fields');
        const keyParameter = (operation.parameters ?? [])
          .map((parameter) => resolve<{ name: string; description: string }>(parameter))
          .find((parameter) => parameter.name === 'Idempotency-Key');
        if (withheld)
          expect(keyParameter!.description, where).toMatch(/responses are never kept: they can hold/);
        else expect(keyParameter!.description, where).not.toMatch(/responses are never kept/);
        const inUse = resolve<{ description: string }>(operation.responses['409']);
        expect(inUse.description, where).toMatch(/Idempotency-Key is still running/);
        if (withheld) expect(inUse.description, where).toMatch(/idempotency-response-not-kept/);
        expect(headersOf(operation.responses['409']), where).toContain('Retry-After');
        expect(resolve<{ description: string }>(operation.responses['422']).description, where).toMatch(
          /Idempotency-Key was used for a different request/,
        );
      }
    }
    expect(idempotent).toBeGreaterThanOrEqual(15);
    expect(document.paths['/reactors/{id}/react']!.post!['x-returns-sensitive']).toEqual(['token-data']);
    expect(document.paths['/v2/tokens/search']!.post!['x-returns-sensitive']).toEqual(['token-data']);
    expect(document.paths['/applications']!.post!['x-returns-sensitive']).toEqual(['api-key']);
    expect(document.paths['/tokens']!.post!['x-returns-sensitive']).toEqual(['token-summary']);

    const patchToken = document.paths['/tokens/{id}']!.patch!.requestBody!.content as Record<
      string,
      { schema: unknown; example?: unknown }
    >;
    expect(Object.keys(patchToken)).toEqual(['application/merge-patch+json', 'application/json']);
    expect(patchToken['application/merge-patch+json']!.schema).toEqual(
      patchToken['application/json']!.schema,
    );
    expect(patchToken['application/merge-patch+json']!.example).toBeDefined();
  });

  it('the hand-written example of POST /tokens is a body the API accepts', async () => {
    const document = (await (await fetch(`${env.stack.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    const example = document.paths['/tokens']!.post!.requestBody!.content['application/json']!.example;
    const created = await env.tenant.client.request('POST', '/tokens', { body: example });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  it('documents the session endpoints and both ways to authenticate: an API key, or a session (bearer or cookie)', async () => {
    const document = (await (await fetch(`${env.stack.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation & { security?: Record<string, unknown>[] }>>;
      components: {
        securitySchemes: Record<string, { type: string; in?: string; name?: string; scheme?: string }>;
      };
    };
    expect(document.components.securitySchemes).toMatchObject({
      apiKey: { type: 'apiKey', in: 'header', name: 'SVC-API-KEY' },
      sessionBearer: { type: 'http', scheme: 'bearer' },
      sessionCookie: { type: 'apiKey', in: 'cookie', name: 'tv_session' },
    });
    expect(Object.keys(document.paths['/sessions/email']!)).toEqual(['post']);
    expect(Object.keys(document.paths['/sessions']!)).toEqual(['post']);
    expect(Object.keys(document.paths['/sessions/self']!).sort()).toEqual(['delete', 'get']);
    expect(document.paths['/sessions']!.post!.responses).toHaveProperty('201');
    expect(document.paths['/sessions']!.post!.responses).toHaveProperty('410');
    expect(document.paths['/tokens/{id}']!.get!.security).toEqual([
      { apiKey: [] },
      { sessionBearer: [] },
      { sessionCookie: [] },
    ]);
  });
});
