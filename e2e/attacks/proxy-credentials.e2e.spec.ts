// A hostile destination behind a proxy: it records every request it gets and answers what it likes.
// Whatever credential of the service the caller used (API key, proxy key in a header or the query,
// a member's session as a bearer or a cookie, the tenant header), none of it reaches the
// destination; a member's session never authenticates /proxy; the destination's own Authorization
// (a processor's secret key sent with an API key) passes unchanged; and nothing the destination
// answers can set cookies, open CORS or loosen the answer's CSP on the service's origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';
import { sendRaw } from '../support/raw-http.ts';
import {
  echoAnswer,
  startHttpDestination,
  type Received,
  type TestDestination,
} from '../support/destinations.ts';

const inertPolicy = "sandbox; default-src 'none'; frame-ancestors 'none'";

describe('attack: a hostile destination collects the service’s credentials', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let smtp: TestSmtpServer;
  let hostile: TestDestination;
  let elsewhere: TestDestination;
  let session: string;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({
      SMTP_URL: smtp.url,
      PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
      SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR: '1000',
      SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR: '10000',
    });
    tenant = await stack.createTenant('Victim');
    hostile = await startHttpDestination('127.0.0.1');
    elsewhere = await startHttpDestination('127.0.0.1');
    session = await signInOwner();
  });
  afterAll(async () => {
    await Promise.all([hostile?.close(), elsewhere?.close()]);
    await stack?.stop();
    await smtp?.stop();
  });

  /** The owner signs in as a member does (the e-mailed link), cookies carried between the two calls. */
  async function signInOwner(): Promise<string> {
    const members = await tenant.client.request<{ data: { user: { id: string; email: string } }[] }>(
      'GET',
      '/tenants/self/members',
    );
    const email = members.body.data.find((member) => member.user.id === tenant.ownerUserId)!.user.email;
    const asked = await fetch(`${stack.url}/sessions/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email }),
    });
    expect(asked.status).toBe(202);
    const cookies = asked.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!);
    const mail = await smtp.waitFor(email, (m) => m.subject.includes('sign-in'));
    const created = await fetch(`${stack.url}/sessions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(cookies.length ? { cookie: cookies.join('; ') } : {}),
      },
      body: JSON.stringify({ token: linkTokenOf(mail) }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    return ((await created.json()) as { session_token: string }).session_token;
  }

  const createProxy = async (body: Record<string, unknown>) => {
    const created = await tenant.client.request<{ key: string }>('POST', '/proxies', { body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };

  /** A request as raw bytes: header names in any case, a header as many times as given. */
  const raw = (method: string, target: string, headers: [string, string][], body = '') =>
    sendRaw(
      stack.url,
      [
        `${method} ${target} HTTP/1.1`,
        `Host: ${new URL(stack.url).host}`,
        ...headers.map(([name, value]) => `${name}: ${value}`),
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Connection: close',
        '',
        body,
      ].join('\r\n'),
      { halfClose: false },
    );

  /** Everything the destination got, as one text: no credential may be anywhere in it. */
  const everything = (received: Received[]) =>
    received
      .map((request) => `${request.url}\n${JSON.stringify(request.headers)}\n${request.body.toString()}`)
      .join('\n');

  const expectNoServiceCredential = (received: Received[], secrets: string[]) => {
    for (const request of received) {
      expect(
        Object.keys(request.headers).filter((name) => name.startsWith('svc-') || name.startsWith('bt-')),
      ).toEqual([]);
      expect(request.headers.cookie).toBeUndefined();
      expect(request.url).not.toMatch(/(svc|bt)-proxy-key/i);
    }
    const text = everything(received);
    for (const secret of secrets) expect(text).not.toContain(secret);
  };

  it('with an API key (ephemeral proxy): no SVC-* header, tenant header, idempotency key or cookie reaches it', async () => {
    hostile.received.length = 0;
    const answer = await raw(
      'POST',
      '/proxy/collect?x=1',
      [
        ['SVC-API-KEY', tenant.apiKey],
        ['Svc-Proxy-Url', hostile.url],
        ['SVC-TENANT-ID', tenant.tenantId],
        ['SVC-IDEMPOTENCY-KEY', 'idempotency-of-the-service'],
        ['svc-anything-else', 'the service’s'],
        ['Cookie', 'tracking=1'],
        ['COOKIE', 'other=2'],
        ['Content-Type', 'application/json'],
      ],
      '{"hello":"world"}',
    );
    expect(answer.status, answer.body).toBe(201);
    expect(hostile.received).toHaveLength(1);
    expectNoServiceCredential(hostile.received, [
      tenant.apiKey,
      tenant.tenantId,
      'idempotency-of-the-service',
    ]);
    expect(hostile.received[0]!.url).toBe('/collect?x=1');
  });

  it('with an API key and a processor’s own Authorization: the header reaches the destination unchanged; the proxy key (header and query) does not', async () => {
    const proxyKey = await createProxy({ name: 'Processor', destination_url: `${hostile.url}/v1` });
    hostile.received.length = 0;
    for (const [name, value] of [
      ['Authorization', 'Bearer sk_test_processor_secret'],
      ['AUTHORIZATION', 'Basic c2tfdGVzdDo='],
    ] as const) {
      const answer = await raw(
        'POST',
        `/proxy/charges?svc-proxy-key=${proxyKey}&amount=5`,
        [
          ['SVC-API-KEY', tenant.apiKey],
          ['SVC-PROXY-KEY', proxyKey],
          [name, value],
          ['Cookie', `tv_session=${session}`],
          ['Content-Type', 'application/json'],
        ],
        '{}',
      );
      expect(answer.status, answer.body).toBe(201);
      expect(hostile.received.at(-1)!.headers.authorization).toBe(value);
      expect(hostile.received.at(-1)!.url).toBe('/v1/charges?amount=5');
    }
    expectNoServiceCredential(hostile.received, [tenant.apiKey, proxyKey, session]);
  });

  it('a member’s session (bearer or cookie) never authenticates /proxy: 401 naming SVC-API-KEY, nothing sent', async () => {
    const proxyKey = await createProxy({ name: 'Needs a key', destination_url: hostile.url });
    hostile.received.length = 0;
    const attempts: [string, [string, string][]][] = [
      [
        '/proxy/ephemeral',
        [
          ['SVC-PROXY-URL', hostile.url],
          ['Authorization', `Bearer ${session}`],
        ],
      ],
      [
        '/proxy/ephemeral',
        [
          ['SVC-PROXY-URL', hostile.url],
          ['Cookie', `tv_session=${session}`],
        ],
      ],
      [
        '/proxy/configured',
        [
          ['SVC-PROXY-KEY', proxyKey],
          ['authorization', `bearer ${session}`],
        ],
      ],
      [`/proxy/configured?svc-proxy-key=${proxyKey}`, [['Cookie', `a=1; tv_session=${session}`]]],
    ];
    for (const [target, headers] of attempts) {
      for (const method of ['GET', 'POST']) {
        const answer = await raw(method, target, [...headers, ['Sec-Fetch-Site', 'same-origin']]);
        expect(answer.status, `${method} ${target}: ${answer.body}`).toBe(401);
        expect(answer.headers['content-type']).toContain('application/problem+json');
        expect((JSON.parse(answer.body) as { detail: string }).detail).toContain('SVC-API-KEY');
      }
    }
    expect(hostile.received).toEqual([]);
  });

  it('under Basis Theory’s names (BT-API-KEY, BT-PROXY-URL, BT-PROXY-KEY, bt-proxy-key): nothing of the service reaches it', async () => {
    hostile.received.length = 0;
    const ephemeral = await raw('POST', '/proxy/collect', [
      ['BT-API-KEY', tenant.apiKey],
      ['Bt-Proxy-Url', hostile.url],
      ['BT-IDEMPOTENCY-KEY', 'idempotency-of-the-service'],
      ['BT-TRACE-ID', 'trace-of-the-caller'],
    ]);
    expect(ephemeral.status, ephemeral.body).toBe(201);
    const proxyKey = await createProxy({ name: 'BT names', destination_url: hostile.url });
    const inHeader = await raw('GET', '/proxy/bt', [
      ['BT-API-KEY', tenant.apiKey],
      ['BT-PROXY-KEY', proxyKey],
    ]);
    expect(inHeader.status, inHeader.body).toBe(201);
    const inQuery = await raw('GET', `/proxy/bt?bt-proxy-key=${proxyKey}&keep=1`, [
      ['BT-API-KEY', tenant.apiKey],
    ]);
    expect(inQuery.status, inQuery.body).toBe(201);
    expect(hostile.received).toHaveLength(3);
    expect(hostile.received[2]!.url).toBe('/bt?keep=1');
    expectNoServiceCredential(hostile.received, [tenant.apiKey, proxyKey, 'idempotency-of-the-service']);
  });

  it('a proxy without auth, called with a member’s session: neither the bearer nor the cookie is forwarded', async () => {
    const proxyKey = await createProxy({ name: 'Open', destination_url: hostile.url, require_auth: false });
    hostile.received.length = 0;
    const answer = await raw('GET', `/proxy/open?svc-proxy-key=${proxyKey}`, [
      ['Authorization', `Bearer ${session}`],
      ['Cookie', `tv_session=${session}`],
      ['Cookie', 'second=1'],
      ['SVC-TENANT-ID', tenant.tenantId],
    ]);
    expect(answer.status, answer.body).toBe(201);
    expect(hostile.received).toHaveLength(1);
    expect(hostile.received[0]!.headers.authorization).toBeUndefined();
    expectNoServiceCredential(hostile.received, [session, proxyKey, tenant.tenantId]);
  });

  it('HEAD and OPTIONS with credentials send nothing; a redirect is answered, never followed', async () => {
    hostile.received.length = 0;
    for (const method of ['HEAD', 'OPTIONS']) {
      await raw(method, '/proxy/probe', [
        ['SVC-API-KEY', tenant.apiKey],
        ['SVC-PROXY-URL', hostile.url],
      ]);
    }
    expect(hostile.received).toEqual([]);
    hostile.answer((_request, res) => {
      res.writeHead(302, { location: `${elsewhere.url}/steal` });
      res.end();
    });
    try {
      const answer = await raw('GET', '/proxy/moved', [
        ['SVC-API-KEY', tenant.apiKey],
        ['SVC-PROXY-URL', hostile.url],
        ['Authorization', 'Bearer sk_test_processor_secret'],
      ]);
      expect(answer.status).toBe(302);
      expect(elsewhere.received).toEqual([]);
    } finally {
      hostile.answer(echoAnswer);
    }
  });

  it('a browser loading /proxy as a script, style or worker of a page is refused (400 naming Sec-Fetch-Dest), nothing sent', async () => {
    hostile.received.length = 0;
    for (const destination of ['script', 'style', 'worker', 'serviceworker']) {
      const answer = await raw('GET', '/proxy/gadget.js', [
        ['SVC-API-KEY', tenant.apiKey],
        ['SVC-PROXY-URL', hostile.url],
        ['Sec-Fetch-Dest', destination],
      ]);
      expect(answer.status, destination).toBe(400);
      expect(Object.keys((JSON.parse(answer.body) as { errors: object }).errors)).toEqual(['Sec-Fetch-Dest']);
    }
    expect(hostile.received).toEqual([]);
    for (const destination of ['document', 'empty']) {
      const answer = await raw('GET', '/proxy/page', [
        ['SVC-API-KEY', tenant.apiKey],
        ['SVC-PROXY-URL', hostile.url],
        ['Sec-Fetch-Dest', destination],
      ]);
      expect(answer.status, destination).toBe(201);
    }
  });

  /** What the destination tries to leave on the service's origin with its answer. */
  const hostileHeaders = {
    'content-type': 'text/html',
    'set-cookie': ['tv_session=planted; Path=/', 'other=1; Path=/'],
    'set-cookie2': 'legacy=1',
    'clear-site-data': '"cookies", "storage"',
    'strict-transport-security': 'max-age=0',
    'alt-svc': 'h2="127.0.0.1:1"',
    'content-security-policy': "script-src * 'unsafe-inline'",
    'content-security-policy-report-only': "default-src 'none'; report-uri http://127.0.0.1:1/",
    'service-worker-allowed': '/',
    'access-control-allow-origin': 'https://attacker.example',
    'access-control-allow-credentials': 'true',
    'access-control-expose-headers': '*',
    'x-content-type-options': 'none',
    'x-kept': 'kept',
  };
  const dropped = Object.keys(hostileHeaders).filter(
    (name) => !['content-type', 'x-kept', 'content-security-policy', 'x-content-type-options'].includes(name),
  );

  const expectInert = (headers: Record<string, string>) => {
    for (const name of dropped) expect(headers[name], name).toBeUndefined();
    expect(headers['content-security-policy']).toBe(inertPolicy);
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['x-kept']).toBe('kept');
  };

  it('the destination’s answer sets no cookie, opens no CORS and loosens no CSP: the answer is inert', async () => {
    hostile.answer((_request, res) => {
      res.writeHead(200, hostileHeaders);
      res.end('<script>alert(document.cookie)</script>');
    });
    try {
      const answer = await raw('GET', '/proxy/page', [
        ['SVC-API-KEY', tenant.apiKey],
        ['SVC-PROXY-URL', hostile.url],
      ]);
      expect(answer.status).toBe(200);
      expectInert(answer.headers);
    } finally {
      hostile.answer(echoAnswer);
    }
  });

  it('a response transform’s headers pass the same rules as the destination’s', async () => {
    const proxyKey = await createProxy({
      name: 'Rewrites answers',
      destination_url: hostile.url,
      response_transforms: [
        {
          type: 'code',
          code: `module.exports = async () => ({ headers: ${JSON.stringify(hostileHeaders)}, body: '<script>alert(1)</script>' });`,
        },
      ],
    });
    const answer = await raw('GET', `/proxy/page?svc-proxy-key=${proxyKey}`, [
      ['SVC-API-KEY', tenant.apiKey],
    ]);
    expect(answer.status, answer.body).toBe(201);
    expectInert(answer.headers);
  });
});
