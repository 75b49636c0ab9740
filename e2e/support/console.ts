// The console in Chromium as a member uses it: helpers shared by the browser specs.
import type { Page } from 'playwright-core';
import { linkTokenOf, type ReceivedMail, type TestSmtpServer } from './smtp.ts';

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

/** Signs a member in through the console, as a person does: the address, then the e-mailed link. */
export async function signInThroughConsole(
  page: Page,
  baseUrl: string,
  smtp: TestSmtpServer,
  email: string,
): Promise<void> {
  const mail = await requestLinkInConsole(page, baseUrl, smtp, email);
  await page.goto(signInLinkOf(baseUrl, mail));
  await page.getByRole('button', { name: `Sign out ${email}` }).waitFor();
}
