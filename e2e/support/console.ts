// The console in Chromium as a member uses it: helpers shared by the browser specs.
import { afterAll, beforeAll } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './browser.ts';
import { linkTokenOf, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './smtp.ts';
import { startStack, type TestStack } from './stack.ts';

export interface ConsoleEnv {
  browser: Browser;
  stack: TestStack;
  smtp: TestSmtpServer;
  /** A page in a browser context of its own (its own cookies), closed after the tests. */
  newPage(): Promise<Page>;
}

/**
 * The set-up of a browser spec: an SMTP server, the stack sending to it, and Chromium, before its
 * tests; all stopped after them. Read the fields inside the tests (they are set by then).
 */
export function useConsoleStack(overrides: Record<string, string> = {}): ConsoleEnv {
  const contexts: BrowserContext[] = [];
  const env = {
    async newPage() {
      const context = await env.browser.newContext();
      contexts.push(context);
      return context.newPage();
    },
  } as ConsoleEnv;
  beforeAll(async () => {
    env.smtp = await startSmtpServer();
    [env.browser, env.stack] = await Promise.all([
      launchChromium(),
      startStack({ SMTP_URL: env.smtp.url, ...overrides }),
    ]);
  }, 600_000);
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await env.browser?.close();
    await env.stack?.stop();
    await env.smtp?.stop();
  });
  return env;
}

/**
 * Asks for a sign-in link on the console's sign-in page of this page's browser, and returns the
 * e-mail that brings it (the first to this address after the request).
 */
export async function requestLinkInConsole(
  page: Page,
  baseUrl: string,
  smtp: TestSmtpServer,
  email: string,
): Promise<ReceivedMail> {
  const before = new Set(smtp.messages);
  await page.goto(`${baseUrl}/console`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByRole('button', { name: 'E-mail me a sign-in link' }).click();
  await page.getByText('Check your inbox').waitFor();
  return smtp.waitFor(email, (mail) => !before.has(mail) && mail.subject.includes('sign-in'));
}

/** The console's page of an e-mailed sign-in link (`PUBLIC_URL/sign-in#token=…`). */
export const signInLinkOf = (baseUrl: string, mail: ReceivedMail) =>
  `${baseUrl}/sign-in#token=${encodeURIComponent(linkTokenOf(mail))}`;

/**
 * Signs a member in through the console, as a person does: the address, then the e-mailed link;
 * done when the console's first page (the tenant's) is drawn.
 */
export async function signInThroughConsole(
  page: Page,
  baseUrl: string,
  smtp: TestSmtpServer,
  email: string,
): Promise<void> {
  const mail = await requestLinkInConsole(page, baseUrl, smtp, email);
  await page.goto(signInLinkOf(baseUrl, mail));
  await page.getByRole('button', { name: `Sign out ${email}` }).waitFor();
  // The tenant page is drawn: its answers come no more (a late one would replace the next page).
  await page.getByRole('heading', { name: 'Usage' }).waitFor();
}
