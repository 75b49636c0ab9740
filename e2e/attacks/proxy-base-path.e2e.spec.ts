// A caller of a pre-configured proxy tries to leave its base path (destination_url `…/base`) and
// reach another path of the destination's host, with dot segments in every form a URL parser or a
// destination's server may resolve: raw, percent-encoded, with backslashes or encoded slashes as
// separators. Sent as raw HTTP: fetch would resolve the dot segments before sending.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.ts';
import { sendRaw } from '../support/raw-http.ts';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';

const escapes = [
  '/../admin',
  '/x/../../admin',
  '/..',
  '/./admin',
  '/x/./../../admin',
  '/%2e%2e/admin',
  '/%2E%2E/admin',
  '/.%2e/admin',
  '/%2e./admin',
  '/x/%2e%2e/%2E%2e/admin',
  '/%2e',
  '/..%2fadmin',
  '/..%2Fadmin',
  '/x%2f..%2f..%2fadmin',
  '/%2e%2e%2fadmin',
  '/..\\admin',
  '/x\\..\\..\\admin',
  '/..%5cadmin',
  '/..%5Cadmin',
  '/%2e%2e%5cadmin',
  '/..;/admin',
  '/x/..;jsessionid=1/..;/admin',
];

describe('attack: a proxy caller walks out of the destination’s base path', () => {
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let destination: TestDestination;
  let proxyKey: string;

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    const created = await env.tenant.client.request<{ key: string }>('POST', '/proxies', {
      body: { name: 'Based', destination_url: `${destination.url}/base` },
    });
    expect(created.status).toBe(201);
    proxyKey = created.body.key;
  });
  afterAll(async () => destination?.close());

  const send = (path: string, headers: string[]) =>
    sendRaw(
      env.stack.url,
      [
        `GET /proxy${path} HTTP/1.1`,
        'Host: vault.example',
        `SVC-API-KEY: ${env.tenant.apiKey}`,
        ...headers,
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
      { halfClose: false },
    );

  const outsideBase = () => destination.received.filter((request) => !/^\/base(\/|\?|$)/.test(request.url));

  for (const [kind, header] of [
    ['a pre-configured proxy (destination_url)', () => `SVC-PROXY-KEY: ${proxyKey}`],
    ['an ephemeral proxy (SVC-PROXY-URL)', () => `SVC-PROXY-URL: ${destination.url}/base`],
  ] as const) {
    describe(kind, () => {
      for (const path of escapes) {
        it(`refuses ${path} with a 400 naming path, and sends nothing`, async () => {
          destination.received.length = 0;
          const answer = await send(path, [header()]);
          expect(outsideBase().map((request) => request.url)).toEqual([]);
          expect(answer.status, answer.body).toBe(400);
          expect(answer.headers['content-type']).toContain('application/problem+json');
          expect(Object.keys((JSON.parse(answer.body) as { errors: object }).errors)).toEqual(['path']);
          expect(destination.received).toEqual([]);
        });
      }

      it('still forwards paths whose names merely contain dots or encoded characters', async () => {
        destination.received.length = 0;
        for (const path of ['/v1/charges', '/a..b/.well-known/c.json', '/x/...', '/a%20b/%2e%2ex']) {
          const answer = await send(path, [header()]);
          expect(answer.status, `${path}: ${answer.body}`).toBe(201);
        }
        expect(destination.received.map((request) => request.url)).toEqual([
          '/base/v1/charges',
          '/base/a..b/.well-known/c.json',
          '/base/x/...',
          '/base/a%20b/%2e%2ex',
        ]);
      });
    });
  }
});
