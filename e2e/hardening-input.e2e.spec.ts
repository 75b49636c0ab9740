import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ApiResponse } from '@tokenvault/sdk';
import { sendRaw } from './support/raw-http.ts';
import { eventCount, useStack } from './support/stack.ts';

interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: Record<string, string[]>;
}

/** A problem+json answer of this status whose errors name exactly these fields. */
function expectProblem(response: ApiResponse<unknown>, status: number, fields?: string[]) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/problem+json');
  const body = response.body as ProblemBody;
  expect(body).toMatchObject({ status, title: expect.any(String), type: expect.stringMatching(/^https:/) });
  if (fields) expect(Object.keys(body.errors ?? {}).sort()).toEqual([...fields].sort());
  return body;
}

/** A body whose `field` is arrays nested `levels` deep, as text (JSON.stringify would overflow). */
const deepBody = (field: string, levels: number) =>
  `{"${field}":${'['.repeat(levels)}1${']'.repeat(levels)}}`;

const nested = (levels: number, innermost: unknown = 1): unknown => {
  let value = innermost;
  for (let level = 0; level < levels; level++) value = level % 2 ? { a: value } : [value];
  return value;
};

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('hostile input', () => {
  const env = useStack();
  const client = () => env.tenant.client;
  const raw = (request: string | Buffer) => sendRaw(env.stack.url, request);
  const rawGet = (path: string | Buffer) =>
    raw(
      Buffer.concat([
        Buffer.from('GET '),
        Buffer.from(path),
        Buffer.from(` HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${env.tenant.apiKey}\r\nConnection: close\r\n\r\n`),
      ]),
    );

  describe('malformed percent-encoding in a path parameter: 400 naming path', () => {
    for (const path of [
      '/tokens/%zz',
      '/tokens/%',
      '/tokens/%E2%82',
      '/tokens/%C0%AF',
      '/tokens/%ED%A0%80',
      '/applications/%zz',
      '/tokens/parent/children/%E2%82',
      '/tenants/self/members/%',
    ]) {
      it(path, async () => {
        const response = await rawGet(path);
        expect(response.status).toBe(400);
        expect(response.headers['content-type']).toContain('application/problem+json');
        const body = JSON.parse(response.body) as ProblemBody;
        expect(body.status).toBe(400);
        expect(Object.keys(body.errors ?? {})).toEqual(['path']);
        // The offending value is not echoed back.
        const segment = path.slice(path.lastIndexOf('/') + 1);
        if (segment.length > 1) expect(response.body).not.toContain(segment);
      });
    }
  });

  describe('a body that fails to decompress', () => {
    const json = Buffer.from(JSON.stringify({ data: 'compressed' }));
    const cases: [string, string, Buffer, number][] = [
      ['gzip that is not gzip', 'gzip', json, 400],
      [
        'corrupt deflate',
        'deflate',
        Buffer.concat([deflateSync(json).subarray(0, 2), Buffer.from([1, 2, 3, 4, 5])]),
        400,
      ],
      ['br that is not brotli', 'br', Buffer.from('not brotli at all, not even close'), 400],
      ['truncated gzip', 'gzip', gzipSync(json).subarray(0, 15), 400],
      ['an unsupported encoding', 'compress', json, 415],
    ];
    for (const [name, encoding, body, status] of cases) {
      it(`${name}: ${status} problem+json`, async () => {
        const response = await fetch(new URL('/tokens', env.stack.url), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-encoding': encoding,
            'svc-api-key': env.tenant.apiKey,
          },
          body,
        });
        expect(response.status).toBe(status);
        expect(response.headers.get('content-type')).toContain('application/problem+json');
        const problem = (await response.json()) as ProblemBody;
        expect(problem.status).toBe(status);
        if (status === 400) expect(Object.keys(problem.errors ?? {})).toEqual(['body']);
      });
    }

    it('a well-formed compressed body still works', async () => {
      for (const [encoding, body] of [
        ['gzip', gzipSync(json)],
        ['br', brotliCompressSync(json)],
      ] as const) {
        const response = await fetch(new URL('/tokens', env.stack.url), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-encoding': encoding,
            'svc-api-key': env.tenant.apiKey,
          },
          body,
        });
        expect(response.status).toBe(201);
      }
    });
  });

  describe('NUL and lone surrogates in strings that reach PostgreSQL: 400 naming the field', () => {
    const cases: [string, () => Promise<ApiResponse<unknown>>, string[]][] = [
      [
        'an application name with NUL',
        () => client().request('POST', '/applications', { body: { name: 'a\u0000b', type: 'private' } }),
        ['body.name'],
      ],
      [
        'an application name with a lone surrogate',
        () => client().request('POST', '/applications', { body: { name: 'a\ud800', type: 'private' } }),
        ['body.name'],
      ],
      [
        'a tenant name with NUL',
        () => client().request('PUT', '/tenants/self', { body: { name: 'Acme\u0000' } }),
        ['body.name'],
      ],
      [
        'a tenant name with a lone low surrogate',
        () => client().request('PUT', '/tenants/self', { body: { name: '\udc00Acme' } }),
        ['body.name'],
      ],
      [
        'a metadata value with NUL',
        () => client().request('POST', '/tokens', { body: { data: 1, metadata: { note: 'a\u0000' } } }),
        ['body.metadata.note'],
      ],
      [
        'a metadata key with NUL (named by its object, never echoed)',
        () => client().request('POST', '/tokens', { body: { data: 1, metadata: { 'k\u0000': 'v' } } }),
        ['body.metadata'],
      ],
      [
        'a metadata key with a lone surrogate',
        () => client().request('POST', '/tokens', { body: { data: 1, metadata: { '\ud83d': 'v' } } }),
        ['body.metadata'],
      ],
      [
        'token data with a lone surrogate (it would be corrupted when sealed)',
        () => client().request('POST', '/tokens', { body: { data: { deep: ['ok', 'x\udfff'] } } }),
        ['body.data'],
      ],
      [
        'token data with a lone surrogate in a key',
        () => client().request('POST', '/tokens', { body: { data: { 'secret\ud800': 1 } } }),
        ['body.data'],
      ],
      [
        'a child token with a lone surrogate in its data',
        () => client().request('POST', '/tokens/some-parent/children', { body: { data: '\ud800' } }),
        ['body.data'],
      ],
      [
        'a /logs entity_type filter with NUL',
        () => client().request('GET', '/logs', { query: { entity_type: 'token\u0000' } }),
        ['query.entity_type'],
      ],
      [
        'a /logs entity_id filter with NUL',
        () => client().request('GET', '/logs', { query: { entity_id: '\u0000' } }),
        ['query.entity_id'],
      ],
      [
        'a repeated query value with NUL',
        () => client().request('GET', '/tokens/p/children', { query: { id: ['a', 'b\u0000'] } }),
        ['query.id.1'],
      ],
      [
        'a query parameter name with NUL',
        () => client().request('GET', '/applications', { query: { 'page\u0000': 1 } }),
        ['query'],
      ],
      [
        'invitation acceptance with NUL in first_name',
        () =>
          client().request('POST', '/tenants/invitations/accept', {
            body: { token: 'x', first_name: 'Ada\u0000', last_name: 'Lovelace' },
          }),
        ['body.first_name'],
      ],
      [
        'invitation acceptance with a lone surrogate in last_name',
        () =>
          client().request('POST', '/tenants/invitations/accept', {
            body: { token: 'x', last_name: '\ud800' },
          }),
        ['body.last_name'],
      ],
    ];
    for (const [name, send, fields] of cases) {
      it(name, async () => {
        const before = await eventCount(env.stack);
        const response = await send();
        expectProblem(response, 400, fields);
        expect(await eventCount(env.stack)).toBe(before);
      });
    }

    it('NUL inside token data is kept: it is sealed, never a PostgreSQL text value', async () => {
      const data = { 'key\u0000': 'value\u0000with NUL' };
      const created = await client().tokens.create({ data });
      expect((await client().tokens.get(created.id)).data).toEqual(data);
    });

    it('well-formed surrogate pairs (emoji) are fine everywhere', async () => {
      const created = await client().tokens.create({ data: '🔐', metadata: { '🏷️': 'ok 🎉' } });
      expect(await client().tokens.get(created.id)).toMatchObject({
        data: '🔐',
        metadata: { '🏷️': 'ok 🎉' },
      });
    });
  });

  describe('deeply nested JSON: 400 before anything recursive runs', () => {
    it('token data nested 5,000 levels', async () => {
      const response = await client().request('POST', '/tokens', { rawBody: deepBody('data', 5_000) });
      expectProblem(response, 400, ['body.data']);
      expect(JSON.stringify(response.body)).toContain('64');
    });

    it('token data nested 2,500 levels under a child route', async () => {
      const response = await client().request('POST', '/tokens/p/children', {
        rawBody: deepBody('data', 2_500),
      });
      expectProblem(response, 400, ['body.data']);
    });

    it('deep nesting elsewhere in a body is named by its top-level field', async () => {
      const response = await client().request('POST', '/tokens', {
        rawBody: deepBody('metadata', 3_000).replace('{', '{"data":1,'),
      });
      expectProblem(response, 400, ['body.metadata']);
    });

    it('a body that is itself a deep array is named as the body', async () => {
      const response = await client().request('PUT', '/tenants/self', {
        rawBody: `${'['.repeat(4_000)}${']'.repeat(4_000)}`,
      });
      expectProblem(response, 400, ['body']);
    });

    it('the limit: 64 levels in the body (63 in data) pass, 65 do not', async () => {
      const ok = await client().request('POST', '/tokens', { body: { data: nested(63) } });
      expect(ok.status).toBe(201);
      const tooDeep = await client().request('POST', '/tokens', { body: { data: nested(64) } });
      expectProblem(tooDeep, 400, ['body.data']);
    });
  });

  describe('instants outside the years 0001–9999 (found by the fuzzer: such an expiry stopped the projection)', () => {
    it('an expiry past 9999 once its offset is applied: 400 naming body.expires_at, nothing appended', async () => {
      const before = await eventCount(env.stack);
      const response = await client().request('POST', '/tokens', {
        body: { data: 1, expires_at: '9999-12-31T23:59:59-23:59' },
      });
      expectProblem(response, 400, ['body.expires_at']);
      expect(await eventCount(env.stack)).toBe(before);
    });

    it('the last representable expiry is fine, and the read models keep up', async () => {
      const response = await client().request('POST', '/tokens', {
        body: { data: 1, expires_at: '9999-12-31T23:59:59.999Z' },
      });
      expect(response.status).toBe(201);
      expect(response.headers.get('x-read-model-lagging')).toBeNull();
    });

    it('/logs dates in year 0: 400 naming the filter', async () => {
      expectProblem(await client().request('GET', '/logs', { query: { start_date: '0000-01-01' } }), 400, [
        'query.start_date',
      ]);
      expectProblem(
        await client().request('GET', '/logs', { query: { end_date: '0001-01-01T00:30:00+01:00' } }),
        400,
        ['query.end_date'],
      );
    });
  });

  describe('forged /logs cursors: 400 naming query.start', () => {
    const forged: [string, string][] = [
      ['a year past what PostgreSQL holds', cursorOf(['+275760-09-13T00:00:00.000Z', 1])],
      ['a year before the era', cursorOf(['-000001-01-01T00:00:00.000Z', 1])],
      ['year 0', cursorOf(['0000-01-01T00:00:00.000Z', 1])],
      ['a date that does not exist', cursorOf(['2026-02-30T00:00:00.000Z', 1])],
      ['another date format', cursorOf(['Tue, 01 Jan 2026 00:00:00 GMT', 1])],
      ['a huge position', cursorOf(['2026-01-01T00:00:00.000Z', 1e300])],
      ['a negative position', cursorOf(['2026-01-01T00:00:00.000Z', -1])],
      ['a position as text', cursorOf(['2026-01-01T00:00:00.000Z', '1'])],
      ['an object', cursorOf({ createdAt: '2026-01-01T00:00:00.000Z', position: 1 })],
      ['a string', cursorOf('2026-01-01T00:00:00.000Z')],
      ['null', cursorOf(null)],
      ['three items', cursorOf(['2026-01-01T00:00:00.000Z', 1, 2])],
      ['an empty array', cursorOf([])],
      ['not JSON', Buffer.from('\u0000\u0001garbage').toString('base64url')],
    ];
    for (const [name, start] of forged) {
      it(name, async () => {
        const response = await client().request('GET', '/logs', { query: { start } });
        expectProblem(response, 400, ['query.start']);
      });
    }

    it('a cursor the service gave out still works', async () => {
      const first = await client().request<{ pagination: { next: string | null } }>('GET', '/logs', {
        query: { size: 1 },
      });
      expect(first.body.pagination.next).toEqual(expect.any(String));
      const second = await client().request('GET', '/logs', {
        query: { size: 1, start: first.body.pagination.next! },
      });
      expect(second.status).toBe(200);
    });
  });

  describe("Node's HTTP parser errors: problem+json, not an empty body", () => {
    const cases: [string, string | Buffer][] = [
      [
        'Content-Length and Transfer-Encoding together',
        'POST /tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      ],
      [
        'a Content-Length that is not a number',
        'POST /tokens HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      ],
      ['a bad chunk size', 'POST /tokens HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
      [
        'non-ASCII bytes in the path',
        Buffer.concat([
          Buffer.from('GET /tokens/'),
          Buffer.from([0xff, 0xfe]),
          Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
        ]),
      ],
      [
        'a control character in a header value',
        'GET /tokens/x HTTP/1.1\r\nHost: x\r\nX-Note: a\u0001b\r\n\r\n',
      ],
      ['a space in a header name', 'GET /tokens/x HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n'],
      ['not HTTP at all', 'HELLO\r\n\r\n'],
    ];
    for (const [name, request] of cases) {
      it(name, async () => {
        const response = await raw(request);
        expect(response.status).toBe(400);
        expect(response.headers['content-type']).toBe('application/problem+json');
        expect(response.headers['cache-control']).toBe('no-store');
        expect(JSON.parse(response.body)).toMatchObject({ status: 400, title: 'Bad Request' });
      });
    }

    it('headers over the size limit: 431 problem+json', async () => {
      const response = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(response.status).toBe(431);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(response.body)).toMatchObject({ status: 431 });
    });
  });

  describe('repeatable query parameters: at most 100 values, never silently cut', () => {
    const ids = (count: number) => Array.from({ length: count }, (_, index) => `id-${index}`);
    let parentId = '';
    const children = (query: Record<string, string[]>) =>
      client().request('GET', `/tokens/${parentId}/children`, { query });

    it('100 values are fine', async () => {
      parentId = (await client().tokens.create({ data: 'parent of many' })).id;
      const response = await children({ id: ids(100) });
      expect(response.status).toBe(200);
    });

    it('101 values: 400 naming the parameter', async () => {
      expectProblem(await children({ id: ids(101) }), 400, ['query.id']);
    });

    it('1,500 values (past the old 1,000-pair cut): 400, not a silent truncation', async () => {
      const response = await children({ id: ids(1_500) });
      const problem = expectProblem(response, 400, ['query.id']);
      expect(problem.errors?.['query.id']).toEqual(['At most 100 values']);
    });

    it('members by user_id: 101 values is a 400 too', async () => {
      const userIds = Array.from({ length: 101 }, () => crypto.randomUUID());
      expectProblem(
        await client().request('GET', '/tenants/self/members', { query: { user_id: userIds } }),
        400,
        ['query.user_id'],
      );
    });

    it('a parameter that is not repeatable, given twice: 400', async () => {
      expectProblem(await client().request('GET', '/applications', { query: { page: ['1', '2'] } }), 400, [
        'query.page',
      ]);
    });
  });

  describe('Cache-Control: no-store on every response', () => {
    it('on token data, child lists, errors and documents', async () => {
      const parent = await client().tokens.create({ data: { secret: 'parent' } });
      await client().request('POST', `/tokens/${parent.id}/children`, { body: { data: 'child' } });
      for (const response of [
        await client().request('GET', `/tokens/${parent.id}`),
        await client().request('GET', `/tokens/${parent.id}/children`),
        await client().request('GET', '/tokens/missing'),
        await client().request('GET', '/tokens/x', { apiKey: null }),
        await env.stack.client.request('GET', '/healthz'),
        await env.stack.client.request('GET', '/openapi.json'),
      ]) {
        expect(response.headers.get('cache-control')).toBe('no-store');
      }
    });
  });

  describe('control characters in names: 400 naming the field', () => {
    const badNames: [string, string][] = [
      ['CR LF', 'Acme\r\nBcc: someone@example.com'],
      ['a trailing line feed', 'Acme\n'],
      ['a C0 control', 'Ac\u0007me'],
      ['DEL', 'Acme\u007f'],
      ['a C1 control (NEL)', 'Acme\u0085'],
      ['the line separator', 'Acme\u2028'],
      ['the paragraph separator', 'Acme\u2029'],
      ['a right-to-left override', 'Acme\u202Egnp.exe'],
      ['a left-to-right embedding', '\u202AAcme'],
      ['a first-strong isolate', 'Acme\u2068x\u2069'],
    ];
    for (const [what, name] of badNames) {
      it(`${what}, in tenant and application names`, async () => {
        const before = await eventCount(env.stack);
        expectProblem(await client().request('PUT', '/tenants/self', { body: { name } }), 400, ['body.name']);
        expectProblem(
          await client().request('POST', '/applications', { body: { name, type: 'private' } }),
          400,
          ['body.name'],
        );
        expectProblem(
          await client().request('PUT', `/applications/${env.tenant.applicationId}`, { body: { name } }),
          400,
          ['body.name'],
        );
        expectProblem(
          await client().request('POST', '/tenants/invitations/accept', {
            body: { token: 'x', first_name: name },
          }),
          400,
          ['body.first_name'],
        );
        expect(await eventCount(env.stack)).toBe(before);
      });
    }

    it('ordinary names with accents, CJK and emoji are fine', async () => {
      const response = await client().request('PUT', '/tenants/self', {
        body: { name: 'Café Ünïcode 株式会社 🚀 — “quoted”' },
      });
      expect(response.status).toBe(200);
    });

    it('the bootstrap CLI refuses such a tenant name', async () => {
      const failure = await promisify(execFile)(
        'node',
        ['services/admin-cli/src/bootstrap.ts', '--tenant-name', 'Acme\r\nX', '--owner-email', 'a@b.test'],
        {
          cwd: new URL('..', import.meta.url).pathname,
          env: { ...process.env, DATABASE_URL: env.stack.database.url, LOG_LEVEL: 'warn' },
        },
      ).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failure?.code).toBe(2);
      expect(failure?.stderr).toContain('--tenant-name');
    });
  });

  it('none of the above was an unexpected error (no "request failed" in the log)', () => {
    expect(env.stack.logs.filter((line) => line.includes('request failed'))).toEqual([]);
  });
});
