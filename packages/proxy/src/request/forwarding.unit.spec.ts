import { describe, expect, it } from 'vitest';
import { problemThrownBy } from '@tokenvault/platform/testing';
import {
  bodyKindOf,
  decodeBody,
  destinationUrl,
  encodeBody,
  forwardedRequestHeaders,
  renderRequest,
  requestTokenIds,
  returnedResponseHeaders,
} from './forwarding.ts';

const sessionToken = `tvs_${'a'.repeat(43)}`;

describe('what a proxied request forwards', () => {
  it('drops the service’s credentials, cookies, hop-by-hop headers, host, content-length and accept-encoding', () => {
    expect(
      forwardedRequestHeaders({
        'svc-api-key': 'key',
        'svc-proxy-url': 'https://x',
        'svc-proxy-key': 'k',
        'svc-tenant-id': '00000000-0000-0000-0000-000000000000',
        'svc-idempotency-key': 'i',
        'svc-anything': 'a',
        cookie: 'tv_session=s; other=1',
        connection: 'keep-alive, x-hop',
        'keep-alive': 'timeout=5',
        'x-hop': 'listed in Connection',
        'transfer-encoding': 'chunked',
        upgrade: 'h2c',
        te: 'trailers',
        'proxy-authorization': 'Basic x',
        host: 'gateway:8080',
        'content-length': '10',
        'accept-encoding': 'gzip',
        authorization: 'Bearer sk_test_processor',
        'idempotency-key': 'the destination’s',
        'content-type': 'application/json',
        'x-custom': ['a', 'b'],
      }),
    ).toEqual({
      authorization: 'Bearer sk_test_processor',
      'idempotency-key': 'the destination’s',
      'content-type': 'application/json',
      'x-custom': ['a', 'b'],
    });
  });

  it('never forwards an Authorization that carries one of the service’s sessions', () => {
    for (const authorization of [`Bearer ${sessionToken}`, `bearer  ${sessionToken} `]) {
      expect(forwardedRequestHeaders({ authorization })).toEqual({});
    }
    expect(forwardedRequestHeaders({ authorization: `Bearer ${sessionToken}x` })).toEqual({
      authorization: `Bearer ${sessionToken}x`,
    });
  });

  it('returns the destination’s headers less hop-by-hop ones, content-length and what would act on the service’s origin', () => {
    expect(
      returnedResponseHeaders({
        connection: 'close',
        'transfer-encoding': 'chunked',
        'content-length': '3',
        location: '/next',
        'content-type': 'text/html',
        'www-authenticate': 'Bearer error="invalid_token"',
        'set-cookie': ['a=1', 'b=2'],
        'set-cookie2': 'c=3',
        'clear-site-data': '"*"',
        'strict-transport-security': 'max-age=0',
        'alt-svc': 'clear',
        nel: '{"report_to":"x","max_age":1}',
        'report-to': '{"group":"x"}',
        'reporting-endpoints': 'x="https://attacker.example"',
        'content-security-policy': 'script-src *',
        'content-security-policy-report-only': "default-src 'none'",
        'x-content-type-options': 'none',
        'service-worker-allowed': '/',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': 'true',
      }),
    ).toEqual({
      location: '/next',
      'content-type': 'text/html',
      'www-authenticate': 'Bearer error="invalid_token"',
      'content-security-policy': "sandbox; default-src 'none'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
    });
  });

  it('appends the path and query to the base URL, less svc-proxy-key', () => {
    expect(destinationUrl('https://api.example/v1', '/charges', '?a=1&svc-proxy-key=k', 'h').href).toBe(
      'https://api.example/v1/charges?a=1',
    );
    expect(destinationUrl('https://api.example/v1', '/c', '?SVC-Proxy-Key=k&b=2', 'h').href).toBe(
      'https://api.example/v1/c?b=2',
    );
    expect(destinationUrl('https://api.example/v1/?x=2', '/c', '?y=3', 'h').href).toBe(
      'https://api.example/v1/c?x=2&y=3',
    );
    expect(destinationUrl('https://api.example', '/', '', 'h').href).toBe('https://api.example/');
    expect(problemThrownBy(() => destinationUrl('api.example', '/', '', 'SVC-PROXY-URL')).errors).toEqual({
      'SVC-PROXY-URL': ['Must be an absolute URL'],
    });
  });

  it.each([
    '/..',
    '/../admin',
    '/x/../../admin',
    '/.',
    '/./a',
    '/%2e%2e/admin',
    '/%2E%2e/admin',
    '/.%2E/admin',
    '/%2e',
    '/..%2fadmin',
    '/x%2F..%2F..%2Fadmin',
    '/..\\admin',
    '/x\\..\\..\\admin',
    '/..%5cadmin',
    '/..%5Cadmin',
    '/..;/admin',
    '/x/..;a=b/admin',
  ])('refuses the path %s: it could leave the base path (400 naming path)', (path) => {
    for (const base of ['https://api.example/base', 'https://api.example/base/', 'https://api.example']) {
      const problem = problemThrownBy(() => destinationUrl(base, path, '', 'h'));
      expect(problem.status).toBe(400);
      expect(Object.keys(problem.errors ?? {})).toEqual(['path']);
    }
  });

  it('checks the URL it builds all the same: a form the parser resolves later is refused too', () => {
    // Not a dot segment as sent, but one once the URL parser drops the tab.
    for (const base of ['https://api.example/base', 'https://api.example/base/']) {
      expect(
        Object.keys(problemThrownBy(() => destinationUrl(base, '/.\t./admin', '', 'h')).errors ?? {}),
      ).toEqual(['path']);
    }
  });

  it.each([
    ['/a..b/c', 'https://api.example/base/a..b/c'],
    ['/.well-known/x', 'https://api.example/base/.well-known/x'],
    ['/...', 'https://api.example/base/...'],
    ['/%2e%2ex', 'https://api.example/base/%2e%2ex'],
    ['/a%2fb', 'https://api.example/base/a%2fb'],
  ])('forwards %s, whose dots are part of a name, under the base', (path, href) => {
    expect(destinationUrl('https://api.example/base', path, '', 'h').href).toBe(href);
  });

  it.each([
    ['application/json', 'json'],
    ['application/vnd.api+json; charset=utf-8', 'json'],
    ['application/x-www-form-urlencoded', 'form'],
    ['text/plain', 'text'],
    ['text/csv; charset=utf-8', 'text'],
    ['application/xml', 'text'],
    ['application/soap+xml', 'text'],
    ['application/octet-stream', 'bytes'],
    ['multipart/form-data; boundary=x', 'bytes'],
    [undefined, 'bytes'],
  ])('%s bodies are %s', (type, kind) => {
    expect(bodyKindOf(type)).toBe(kind);
  });

  it('form bodies are decoded, rendered value by value and re-encoded', () => {
    const opened = { data: new Map<string, unknown>([['c', { number: '4242424242424242' }]]) };
    const request = {
      headers: { 'x-pan': "{{ c | json: '$.number' | last4 }}" },
      kind: 'form' as const,
      body: decodeBody(
        'form',
        Buffer.from('card%5Bnumber%5D=%7B%7B+c+%7C+json%3A+%27%24.number%27+%7D%7D&n=1'),
        undefined,
      ),
    };
    expect(requestTokenIds(request)).toEqual(['c']);
    const rendered = renderRequest(request, opened);
    expect(rendered.headers).toEqual({ 'x-pan': '4242' });
    expect(encodeBody('form', rendered.body)?.toString()).toBe('card%5Bnumber%5D=4242424242424242&n=1');
  });

  it('bytes pass as they are, with no expressions looked for', () => {
    const bytes = Buffer.from('{{ c }}');
    const request = { headers: {}, kind: 'bytes' as const, body: decodeBody('bytes', bytes, undefined) };
    expect(requestTokenIds(request)).toEqual([]);
    expect(encodeBody('bytes', renderRequest(request, { data: new Map() }).body)).toBe(bytes);
  });
});
