import { describe, expect, it } from 'vitest';
import { problemOf } from '@tokenvault/platform/testing';
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

describe('what a proxied request forwards', () => {
  it('drops the service’s own headers, hop-by-hop ones, host, content-length and accept-encoding', () => {
    expect(
      forwardedRequestHeaders({
        'svc-api-key': 'key',
        'svc-proxy-url': 'https://x',
        'svc-proxy-key': 'k',
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
        authorization: 'Bearer t',
        'content-type': 'application/json',
        'x-custom': ['a', 'b'],
      }),
    ).toEqual({ authorization: 'Bearer t', 'content-type': 'application/json', 'x-custom': ['a', 'b'] });
  });

  it('returns the destination’s headers less hop-by-hop ones and content-length', () => {
    expect(
      returnedResponseHeaders({
        connection: 'close',
        'transfer-encoding': 'chunked',
        'content-length': '3',
        location: '/next',
        'set-cookie': ['a=1', 'b=2'],
      }),
    ).toEqual({ location: '/next', 'set-cookie': ['a=1', 'b=2'] });
  });

  it('appends the path and query to the base URL, less svc-proxy-key', () => {
    expect(destinationUrl('https://api.example/v1', '/charges', '?a=1&svc-proxy-key=k', 'h').href).toBe(
      'https://api.example/v1/charges?a=1',
    );
    expect(destinationUrl('https://api.example/v1/?x=2', '/c', '?y=3', 'h').href).toBe(
      'https://api.example/v1/c?x=2&y=3',
    );
    expect(destinationUrl('https://api.example', '/', '', 'h').href).toBe('https://api.example/');
    expect(problemOf(() => destinationUrl('api.example', '/', '', 'SVC-PROXY-URL')).errors).toEqual({
      'SVC-PROXY-URL': ['Must be an absolute URL'],
    });
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
