// CORS (CORS_ALLOWED_ORIGINS) lets a shop's card form create tokens with a public key from its
// own origin. What an attacker's page tries: call the API from an origin not listed; ride a
// signed-in member's console cookie from a listed origin (or any other), with a fetch that
// includes credentials; read an answer it should not. The browser is Chromium; the pages are
// served from origins of their own (localhost and 127.0.0.2 ports, the API on 127.0.0.1).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { signInThroughConsole } from '../support/console.ts';
import { ownerEmailOf } from '../support/sign-in.ts';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';

/** A blank page on an origin of its own. */
async function startPageServer(host: string): Promise<{ origin: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end('<!doctype html><title>shop</title><p>checkout</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://${host === '127.0.0.2' ? host : 'localhost'}:${port}`, server };
}

interface FetchOutcome {
  status?: number;
  body?: unknown;
  failed?: string;
}

describe('attack: pages of other origins call the API', () => {
  let shop: { origin: string; server: Server };
  let attacker: { origin: string; server: Server };
  let smtp: TestSmtpServer;
  let stack: TestStack;
  let browser: Browser;
  let tenant: TestTenant;
  let publicKey: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    shop = await startPageServer('127.0.0.1');
    attacker = await startPageServer('127.0.0.2');
    smtp = await startSmtpServer();
    [browser, stack] = await Promise.all([
      launchChromium(),
      startStack({ SMTP_URL: smtp.url, CORS_ALLOWED_ORIGINS: shop.origin }),
    ]);
    tenant = await stack.createTenant('Shop Corp');
    const created = await tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name: 'Card form', type: 'public', permissions: ['token:create'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    publicKey = created.body.key;
  }, 600_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.stop();
    await smtp?.stop();
    shop?.server.close();
    attacker?.server.close();
  });

  async function pageOn(origin: string, context?: BrowserContext): Promise<Page> {
    const own = context ?? (await browser.newContext());
    if (!context) contexts.push(own);
    const page = await own.newPage();
    await page.goto(origin);
    return page;
  }

  /** A fetch run by the page's script; a CORS refusal is a TypeError, never an answer. */
  const fetchFrom = (
    page: Page,
    url: string,
    init: {
      method: string;
      headers?: Record<string, string>;
      body?: string;
      credentials?: 'include' | 'omit' | 'same-origin';
    },
  ) =>
    page.evaluate(
      async ({ url, init }): Promise<FetchOutcome> => {
        try {
          const response = await fetch(url, init);
          return { status: response.status, body: await response.json().catch(() => undefined) };
        } catch (error) {
          return { failed: String(error) };
        }
      },
      { url, init },
    );

  const tokenCount = async () => {
    const page = await tenant.client.request<{ pagination: { total_items: number } }>(
      'GET',
      '/tokens?include_data=false',
    );
    return page.body.pagination.total_items;
  };

  it('a page of a listed origin creates a token with a public key under Basis Theory’s header name', async () => {
    const page = await pageOn(shop.origin);
    const outcome = await fetchFrom(page, `${stack.url}/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'BT-API-KEY': publicKey },
      body: JSON.stringify({ type: 'token', data: 'from the card form' }),
    });
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 201 });
    // The answer was readable by the page: it has the new token's id, not its data.
    expect(outcome.body).toMatchObject({ id: expect.any(String), type: 'token' });
  });

  it('a page of an origin not listed gets no answer, and nothing is created', async () => {
    const before = await tokenCount();
    const page = await pageOn(attacker.origin);
    const outcome = await fetchFrom(page, `${stack.url}/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'SVC-API-KEY': publicKey },
      body: JSON.stringify({ type: 'token', data: 'from the attacker' }),
    });
    expect(outcome.failed).toMatch(/TypeError/);
    expect(await tokenCount()).toBe(before);
    // Its preflight was refused by the service, not only by the browser.
    const preflight = await fetch(`${stack.url}/tokens`, {
      method: 'OPTIONS',
      headers: { origin: attacker.origin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    // The listed origin's preflight: its own origin echoed, never credentials, and none of the
    // headers that carry or select a member's session.
    const listed = await fetch(`${stack.url}/tokens`, {
      method: 'OPTIONS',
      headers: { origin: shop.origin, 'access-control-request-method': 'POST' },
    });
    expect(listed.status).toBe(204);
    expect(listed.headers.get('access-control-allow-origin')).toBe(shop.origin);
    expect(listed.headers.get('access-control-allow-credentials')).toBeNull();
    expect(listed.headers.get('vary')).toMatch(/origin/i);
    const allowedHeaders = listed.headers.get('access-control-allow-headers')!.split(', ');
    expect(allowedHeaders).toEqual(expect.arrayContaining(['bt-api-key', 'svc-api-key', 'content-type']));
    expect(allowedHeaders).not.toContain('authorization');
    expect(allowedHeaders).not.toContain('svc-tenant-id');
  });

  it('a signed-in member’s console cookie never authenticates a page of another origin, listed or not', async () => {
    const memberContext = await browser.newContext();
    contexts.push(memberContext);
    const consolePage = await memberContext.newPage();
    await signInThroughConsole(consolePage, stack.url, smtp, await ownerEmailOf(tenant));
    const session = (await memberContext.cookies()).find((cookie) => cookie.name === 'tv_session')!.value;

    for (const origin of [shop.origin, attacker.origin]) {
      const page = await pageOn(origin, memberContext);
      const outcome = await fetchFrom(page, `${stack.url}/tokens`, { method: 'GET', credentials: 'include' });
      expect(outcome.failed, `${origin}: ${JSON.stringify(outcome)}`).toMatch(/TypeError/);
    }
    // What the browser would send if a cookie went along (a same-site origin, say): refused by
    // the service itself, while the console's own request with the same cookie is served.
    const crossOrigin = await fetch(`${stack.url}/tokens`, {
      headers: {
        cookie: `tv_session=${session}`,
        origin: shop.origin,
        'sec-fetch-site': 'same-site',
        'sec-fetch-mode': 'cors',
      },
    });
    expect(crossOrigin.status).toBe(403);
    expect(crossOrigin.headers.get('access-control-allow-credentials')).toBeNull();
    const own = await fetch(`${stack.url}/tokens`, {
      headers: { cookie: `tv_session=${session}`, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' },
    });
    expect(own.status).toBe(200);
  });

  it('both header names with different values are a 400 naming the field, and nothing is created', async () => {
    const before = await tokenCount();
    const response = await fetch(`${stack.url}/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'SVC-API-KEY': tenant.apiKey, 'BT-API-KEY': publicKey },
      body: JSON.stringify({ type: 'token', data: 'which key?' }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: Record<string, string[]> }).errors).toHaveProperty(
      'headers.bt-api-key',
    );
    expect(await tokenCount()).toBe(before);
  });
});
