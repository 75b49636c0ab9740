// The web console in a real browser (Debian's Chromium, driven by playwright-core; see
// support/browser.ts): sign-in from the e-mailed link, the pages a member uses, axe-core on each
// (no serious or critical violation), a phone-width check, and a screenshot of every page under
// .data/e2e-output/console/ for review.
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/browser.ts';
import { reviewPage, screenshotDir } from './support/console.ts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from './support/smtp.ts';
import { createReactor, echoArgs } from './support/reactors.ts';

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

describe('the web console, in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let stack: TestStack;
  let tenant: TestTenant;
  let smtp: TestSmtpServer;
  let ownerEmail: string;
  const problems: string[] = [];

  beforeAll(async () => {
    mkdirSync(screenshotDir, { recursive: true });
    const port = await freePort();
    smtp = await startSmtpServer();
    [browser, stack] = await Promise.all([
      launchChromium(),
      startStack({ PORT: String(port), SMTP_URL: smtp.url, PUBLIC_URL: `http://127.0.0.1:${port}` }),
    ]);
    tenant = await stack.createTenant('Console Corp');
    const members = await tenant.client.request<{ data: { user: { email: string } }[] }>(
      'GET',
      '/tenants/self/members',
    );
    ownerEmail = members.body.data[0]!.user.email;
    await createReactor(tenant, { code: echoArgs, request_parameters: [{ name: 'hello', type: 'string' }] });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of (401|403)/.test(message.text()))
        problems.push(message.text());
    });
    page.on('dialog', (dialog) => void dialog.accept());
  }, 600_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await stack?.stop();
    await smtp?.stop();
  });

  /** axe-core finds nothing serious, no word breaks across lines, and the page is saved as a screenshot. */
  async function review(name: string) {
    await reviewPage(page, name);
  }

  it('is served under a strict CSP with no inline script, its assets from its own origin', async () => {
    const response = await fetch(`${stack.url}/console`);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe-inline');
    const html = await response.text();
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/);
    expect(html).not.toMatch(/style=/);
    const assets = [...html.matchAll(/(?:src|href)="([^"#][^"]*)"/g)].map((match) => match[1]!);
    expect(assets).toHaveLength(3);
    for (const asset of assets) {
      expect(asset.startsWith('/console/assets/')).toBe(true);
      expect((await fetch(`${stack.url}${asset}`)).status).toBe(200);
    }
  });

  it('signs in with the keyboard: e-mail, "check your inbox", and the e-mailed link signs in', async () => {
    await page.goto(`${stack.url}/console`);
    await page.locator('h1', { hasText: 'Sign in' }).waitFor();
    await review('sign-in');
    // Keyboard only: the page's content has the focus, Tab reaches the address, Enter submits.
    expect(await page.evaluate('document.activeElement.id')).toBe('main');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.name')).toBe('email');
    await page.keyboard.type(ownerEmail);
    await page.keyboard.press('Enter');
    await page.getByText('Check your inbox').waitFor();
    const mail = await smtp.waitFor(ownerEmail, (m) => m.subject.includes('sign-in'));
    const link = `${stack.config.PUBLIC_URL}/sign-in#token=${encodeURIComponent(linkTokenOf(mail))}`;
    expect(mail.text).toContain(link);
    await page.goto(link);
    await page.locator('h1', { hasText: 'Console Corp' }).waitFor();
    // The token left the address bar.
    expect(page.url()).toBe(`${stack.url}/console#/tenant`);
    const cookies = await context.cookies();
    expect(cookies.find((cookie) => cookie.name === 'tv_session')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
    });
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await review('tenant');
  });

  it('creates an application and shows its key once', async () => {
    await page.getByRole('link', { name: 'Applications' }).click();
    await page.getByRole('heading', { name: 'New application' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('From the console');
    await page.getByLabel('token:create', { exact: true }).check();
    await page.getByLabel('token:read', { exact: true }).check();
    await page.getByRole('button', { name: 'Create application' }).click();
    const key = page.locator('#new-key');
    await key.waitFor();
    const shown = await key.innerText();
    expect(shown.length).toBeGreaterThan(20);
    await expect
      .poll(() => page.getByRole('cell', { name: 'From the console', exact: true }).count())
      .toBe(1);
    await review('applications');
    // The key works, and is not shown again.
    const tokens = await fetch(`${stack.url}/tokens`, { headers: { 'svc-api-key': shown } });
    expect(tokens.status).toBe(200);
    await page.reload();
    await page.getByRole('cell', { name: 'From the console', exact: true }).waitFor();
    expect(await page.locator('#new-key').count()).toBe(0);
    expect(await page.content()).not.toContain(shown);
  });

  it('invites a member and lists the invitation (resend and delete offered)', async () => {
    const email = `console-${Date.now()}@example.com`;
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Invite a member' }).waitFor();
    await page.getByLabel('E-mail address').fill(email);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(`Invitation sent to ${email}.`).waitFor();
    await page.getByRole('button', { name: `Resend to ${email}` }).waitFor();
    await smtp.waitFor(email);
    await review('members');
    await page.getByRole('button', { name: `Resend to ${email}` }).click();
    await page.getByText('Invitation sent again.').waitFor();
    await page.getByRole('button', { name: `Delete invitation of ${email}` }).click();
    await page.getByText('Invitation deleted.').waitFor();
    expect(await page.getByRole('button', { name: `Resend to ${email}` }).count()).toBe(0);
  });

  it('lists tokens masked; a reveal shows the data and is a read by the user in the log', async () => {
    const created = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'token', data: { console: 'secret value' } },
    });
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByRole('button', { name: `Reveal the data of ${created.body.id}` }).waitFor();
    expect(await page.content()).not.toContain('secret value');
    await review('tokens');
    await page.getByRole('button', { name: `Reveal the data of ${created.body.id}` }).click();
    await page.getByText('secret value').waitFor();
    const sessions = await tenant.client.request<{ data: { user: { id: string } }[] }>(
      'GET',
      '/tenants/self/members',
    );
    const ownerId = sessions.body.data[0]!.user.id;
    await expect
      .poll(async () => {
        const logs = await tenant.client.request<{
          data: { operation: string; actor_type: string; actor_id: string }[];
        }>('GET', '/logs', { query: { entity_id: created.body.id, size: 100 } });
        return logs.body.data.filter(
          (row) => row.operation === 'read' && row.actor_type === 'user' && row.actor_id === ownerId,
        ).length;
      })
      .toBeGreaterThan(0);
  });

  it('shows the log rows, filtered and paged', async () => {
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('button', { name: 'Filter' }).waitFor();
    await page.locator('tbody tr').first().waitFor();
    expect(await page.locator('tbody').innerText()).toContain('user');
    await review('logs');
    await page.getByLabel('Entity type').selectOption('application');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('cell', { name: 'application', exact: true }).first().waitFor();
    const types = await page.locator('tbody tr td:nth-child(2)').allInnerTexts();
    expect(types.length).toBeGreaterThan(0);
    expect(new Set(types)).toEqual(new Set(['application']));
  });

  it('lists reactor formulas and reactors, and "try it" invokes one', async () => {
    await page.getByRole('link', { name: 'Reactors' }).click();
    await page.getByRole('heading', { name: 'Formulas' }).waitFor();
    await review('reactors');
    await page.getByRole('link', { name: 'Try reactor' }).click();
    await page.getByLabel('Arguments (JSON)').fill('{"hello": "world"}');
    await page.getByRole('button', { name: 'Invoke' }).click();
    await page.getByText('"hello": "world"').waitFor({ timeout: 30_000 });
    await review('reactors-try-it');
  });

  it('is readable at a phone width (no sideways scrolling)', async () => {
    await page.setViewportSize({ width: 375, height: 740 });
    for (const [name, title] of [
      ['tenant', 'Console Corp'],
      ['members', 'Members'],
      ['logs', 'Logs'],
    ] as const) {
      await page.goto(`${stack.url}/console#/${name}`);
      await page.locator('main h1', { hasText: title }).waitFor();
      await page.locator('main tbody tr').first().waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate<number>(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      expect(overflow, name).toBeLessThanOrEqual(0);
      await page.screenshot({ path: `${screenshotDir}phone-${name}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('signs out: the session is refused afterwards', async () => {
    await page.goto(`${stack.url}/console#/tenant`);
    const before = (await context.cookies()).find((item) => item.name === 'tv_session')!.value;
    expect(
      (await fetch(`${stack.url}/sessions/self`, { headers: { authorization: `Bearer ${before}` } })).status,
    ).toBe(200);
    await page.getByRole('button', { name: /^Sign out/ }).click();
    await page.getByText('Signed out.').waitFor();
    const cookie = (await context.cookies()).find((item) => item.name === 'tv_session');
    expect(cookie).toBeUndefined();
    expect(
      (await fetch(`${stack.url}/sessions/self`, { headers: { authorization: `Bearer ${before}` } })).status,
    ).toBe(401);
    await page.locator('h1', { hasText: 'Sign in' }).waitFor();
    expect(problems).toEqual([]);
  });
});
