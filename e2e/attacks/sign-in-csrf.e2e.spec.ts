// Finding 7, login CSRF: the console posted any `#token=` it was opened with to POST /sessions,
// so an attacker who asked for a sign-in link for its own address could make a victim's browser
// open it and sign the victim in as the attacker, silently, even over the victim's own session
// (what the victim then types or stores goes to the attacker's tenant). A link now works only in
// the browser that asked for it (a nonce cookie set by POST /sessions/email), and a console that
// is signed in asks before it uses a link at all.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { signInLinkOf, signInThroughConsole, useConsoleStack } from '../support/console.ts';
import { ownerEmailOf, signInClient } from '../support/sign-in.ts';
import { linkTokenOf } from '../support/smtp.ts';

describe('attack: a sign-in link of the attacker opened in the victim’s browser', () => {
  const env = useConsoleStack();
  let attackerEmail: string;
  let victimEmail: string;
  let victimOtherEmail: string;

  beforeAll(async () => {
    attackerEmail = await ownerEmailOf(await env.stack.createTenant('Attacker Corp'));
    victimEmail = await ownerEmailOf(await env.stack.createTenant('Victim Corp'));
    victimOtherEmail = await ownerEmailOf(await env.stack.createTenant('Victim Side Project'));
  });

  /** The attacker asks for a link for its own address from its own client and reads its mailbox. */
  async function attackersLink() {
    const attacker = signInClient(env.stack.url);
    const before = new Set(env.smtp.messages);
    expect((await attacker.askLink(attackerEmail)).status).toBe(202);
    const mail = await env.smtp.waitFor(attackerEmail, (m) => !before.has(m));
    return { attacker, mail, token: linkTokenOf(mail) };
  }

  /** Whom the page's browser is signed in as (the console's own question), or undefined. */
  const whoAmI = (page: Page) =>
    page.evaluate(async () => {
      const response = await fetch('/sessions/self');
      return response.ok ? ((await response.json()) as { user: { email: string } }).user.email : undefined;
    });

  it('a browser with no session is not signed in as the attacker: the link is refused, with a way to ask for one here', async () => {
    const { attacker, mail, token } = await attackersLink();
    const page = await env.newPage();
    await page.goto(signInLinkOf(env.stack.url, mail));
    await page.locator('main h1').waitFor();
    expect(await whoAmI(page)).toBeUndefined();
    await page.getByText('requested from another browser').waitFor();
    expect((await page.context().cookies()).map((cookie) => cookie.name)).not.toContain('tv_session');
    // The way out: the sign-in form of this browser.
    await page.getByRole('button', { name: 'E-mail me a sign-in link' }).waitFor();
    expect(page.url()).not.toContain(token);
    // The refused attempt did not use the link up: the browser that asked for it still signs in.
    const own = await attacker.signIn(token);
    expect(own.status).toBe(201);
    expect(own.body.user).toMatchObject({ email: attackerEmail });
  });

  it('a browser signed in as the victim stays the victim’s: the console asks first, and the link is refused if used', async () => {
    const { mail } = await attackersLink();
    const page = await env.newPage();
    await signInThroughConsole(page, env.stack.url, env.smtp, victimEmail);
    await page.goto(signInLinkOf(env.stack.url, mail));
    await page.locator('main h1').waitFor();
    expect(await whoAmI(page)).toBe(victimEmail);
    await page.getByText(`You are signed in as ${victimEmail}`).waitFor();
    // Even a victim who says yes is not switched: the link is not this browser's.
    await page.getByRole('button', { name: 'Use the link' }).click();
    await page.getByText('requested from another browser').waitFor();
    expect(await whoAmI(page)).toBe(victimEmail);
  });

  it('a link asked for in this browser switches account only when the member says so', async () => {
    const page = await env.newPage();
    await signInThroughConsole(page, env.stack.url, env.smtp, victimEmail);
    // Its second account's link, asked for by this browser while it is signed in (as a script of
    // the console's origin would; the console shows its sign-in form only when signed out).
    const before = new Set(env.smtp.messages);
    const asked = await page.evaluate(
      (email) =>
        fetch('/sessions/email', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email }),
        }).then((response) => response.status),
      victimOtherEmail,
    );
    expect(asked).toBe(202);
    const mail = await env.smtp.waitFor(victimOtherEmail, (m) => !before.has(m));
    await page.goto(signInLinkOf(env.stack.url, mail));
    await page.getByText(`You are signed in as ${victimEmail}`).waitFor();
    await page.getByRole('button', { name: `Stay signed in as ${victimEmail}` }).click();
    await page.getByRole('button', { name: `Sign out ${victimEmail}` }).waitFor();
    expect(await whoAmI(page)).toBe(victimEmail);
    // The declined link was not used: opened again and accepted, it switches.
    await page.goto(signInLinkOf(env.stack.url, mail));
    await page.getByRole('button', { name: 'Use the link' }).click();
    await page.getByRole('button', { name: `Sign out ${victimOtherEmail}` }).waitFor();
    expect(await whoAmI(page)).toBe(victimOtherEmail);
  });

  it('over the API: POST /sessions without the cookie of POST /sessions/email is a 403 that leaves the link usable', async () => {
    const { attacker, token } = await attackersLink();
    const stranger = await fetch(`${env.stack.url}/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    expect(stranger.status).toBe(403);
    expect(stranger.headers.get('content-type')).toContain('application/problem+json');
    const problem = (await stranger.json()) as { type: string; detail: string };
    expect(problem.type).toContain('sign-in-link-other-browser');
    expect(problem.detail).toContain('requested from another browser or device');
    expect(stranger.headers.get('set-cookie')).toBeNull();
    // Someone else's nonce is no better than none.
    const otherClient = signInClient(env.stack.url);
    await otherClient.askLink(`nobody-${Date.now()}@example.com`);
    expect((await otherClient.signIn(token)).status).toBe(403);
    expect((await attacker.signIn(token)).status).toBe(201);
    expect((await attacker.signIn(token)).status).toBe(410);
  });
});
