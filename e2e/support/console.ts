// The console in Chromium as a member uses it: helpers shared by the browser specs.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect } from 'vitest';
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
      // The width the issue reviews the console at; the clipboard for the key's copy button.
      const context = await env.browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.grantPermissions(['clipboard-read', 'clipboard-write']);
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

/** Where the browser specs save a screenshot of every page they review. */
export const screenshotDir = fileURLToPath(new URL('../../.data/e2e-output/console/', import.meta.url));
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: number;
}

/** axe-core (injected into the page) on the page as it is now: its serious and critical violations. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate<AxeViolation[]>(
    `axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length })))`,
  );
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/**
 * The words in the page's table cells, headings and buttons that the layout broke across lines
 * (a column too narrow wraps "Delete" as "D el et e"): each word's text is measured with a Range,
 * and a word on one line has one box. Identifiers in `code` are left out.
 */
export function wordsBrokenAcrossLines(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const broken = [];
    for (const cell of document.querySelectorAll('main th, main td, main button')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest('code')) continue;
        const text = node.textContent;
        for (const match of text.matchAll(/\\S+/g)) {
          const range = document.createRange();
          range.setStart(node, match.index);
          range.setEnd(node, match.index + match[0].length);
          const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
          if (lines.size > 1) broken.push(match[0]);
        }
      }
    }
    return broken;
  })()`);
}

/**
 * A page reviewed as the issue asks: axe-core finds nothing serious or critical, no word of a
 * table breaks across lines, and a screenshot is saved (its path returned).
 */
export async function reviewPage(page: Page, name: string): Promise<string> {
  expect(await seriousViolations(page), `axe-core on ${name}`).toEqual([]);
  expect(await wordsBrokenAcrossLines(page), `words broken across lines on ${name}`).toEqual([]);
  mkdirSync(screenshotDir, { recursive: true });
  const path = `${screenshotDir}${name}.png`;
  await page.screenshot({ path, fullPage: true });
  return path;
}
