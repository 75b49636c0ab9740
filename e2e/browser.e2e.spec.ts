// In a real browser (Debian's Chromium, driven by playwright-core; installed by apt when missing,
// see support/browser.ts): the API reference renders its operations, and an invitation is
// accepted from the e-mailed link, through the page's form, end to end.
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, ConsoleMessage } from 'playwright-core';
import { launchChromium } from './support/browser.ts';
import { screenshotDir, seriousViolations } from './support/console.ts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.ts';

interface Member {
  id: string;
  role: string;
  user: { id: string; email?: string; first_name?: string; last_name?: string };
}

/** A port free right now: the service listens on it so that PUBLIC_URL (the e-mailed links) is its own address. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('in a browser', () => {
  let browser: Browser;
  let stack: TestStack;
  let tenant: TestTenant;
  let smtp: TestSmtpServer;

  // Installing Chromium with apt, the first time on a fresh machine, takes minutes.
  beforeAll(async () => {
    const port = await freePort();
    smtp = await startSmtpServer();
    [browser, stack] = await Promise.all([
      launchChromium(),
      startStack({ PORT: String(port), SMTP_URL: smtp.url, PUBLIC_URL: `http://127.0.0.1:${port}` }),
    ]);
    tenant = await stack.createTenant('Browser Test Corp');
  }, 600_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await smtp?.stop();
  });

  it('renders the API reference: operations, their permission, nothing refused by the CSP', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message: ConsoleMessage) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('requestfailed', (request) => problems.push(`failed: ${request.url()}`));
    await page.goto(`${stack.url}/docs`);

    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    const paths = await page.locator('.opblock-summary-path').allInnerTexts();
    const summaries = await page.locator('.opblock-summary-description').allInnerTexts();
    expect(paths.length).toBeGreaterThan(30);
    for (const path of ['/tokens', '/tokens/{id}', '/reactors/{id}/react', '/tenants/self/invitations']) {
      expect(paths.map((text) => text.replace(/\u200b/g, '').trim())).toContain(path);
    }
    expect(summaries.some((summary) => /token/i.test(summary))).toBe(true);
    expect(await page.locator('.info .title').innerText()).toContain('Tokenvault API');
    // Swagger UI lists what it could not read (an unresolvable $ref, say) in an errors box.
    expect(await page.locator('.errors-wrapper').count()).toBe(0);

    // An operation opened shows its permission and its example body.
    const operation = page
      .locator('.opblock.opblock-post')
      .filter({ has: page.locator('.opblock-summary-path[data-path="/tokens"]') });
    await operation.locator('.opblock-summary').first().click();
    const description = operation.locator('.opblock-description-wrapper').first();
    await description.waitFor();
    expect(await description.innerText()).toContain('Permission: token:create');
    const example = operation.locator('.opblock-section-request-body .highlight-code').first();
    await example.waitFor();
    expect(await example.innerText()).toContain('4242424242424242');
    // The route guard's header parameter and responses, given by $ref, resolve and show.
    await operation.locator('tr[data-param-name="Idempotency-Key"][data-param-in="header"]').waitFor();
    for (const code of ['409', '422', '429']) {
      await operation.locator(`tr.response[data-code="${code}"]`).waitFor();
    }
    expect(await operation.locator('tr.response[data-code="429"]').innerText()).toContain('Retry-After');
    expect(await page.locator('.errors-wrapper').count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('accepts an invitation from the e-mailed link through the page', async () => {
    const email = `browser-${Date.now()}@example.com`;
    const invited = await tenant.client.request('POST', '/tenants/self/invitations', { body: { email } });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    const mail = await smtp.waitFor(email);
    const link = /https?:\/\/\S+#token=[A-Za-z0-9._~%-]+/.exec(mail.text)?.[0];
    expect(link).toBeDefined();
    expect(link!.startsWith(`${stack.url}/tenants/invitations/accept#token=`)).toBe(true);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(link!);
    expect(await page.locator('h1').innerText()).toBe('Accept your invitation');
    // The page names the tenant and the address, in the console's style, before accepting.
    await page.getByText(`You are invited to join Browser Test Corp as ${email}.`).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    mkdirSync(screenshotDir, { recursive: true });
    await page.screenshot({ path: `${screenshotDir}invitation-accept.png`, fullPage: true });
    await page.fill('input[name="first_name"]', 'Ada');
    await page.fill('input[name="last_name"]', 'Lovelace');
    await page.click('button[type="submit"]');
    const result = page.locator('#result', { hasText: /\S/ });
    await result.waitFor({ timeout: 15_000 });
    expect(await result.innerText()).toBe('Welcome: you are now a member of Browser Test Corp.');
    await page.locator('form').waitFor({ state: 'hidden' });
    await page.screenshot({ path: `${screenshotDir}invitation-accepted.png`, fullPage: true });
    await page.getByRole('link', { name: 'Sign in to the console' }).click();
    await page.locator('h1', { hasText: 'Sign in' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();

    const members = await tenant.client.request<{ data: Member[] }>('GET', '/tenants/self/members', {
      query: { size: 50 },
    });
    expect(members.status).toBe(200);
    const member = members.body.data.find((item) => item.user.email === email);
    expect(member).toMatchObject({ user: { email, first_name: 'Ada', last_name: 'Lovelace' } });
  });
});
