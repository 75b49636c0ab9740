// A member's session can end while the console is open in their browser (signed out from another
// client, or everywhere). The console's next call of the API is answered 401; the console then
// starts over at the sign-in page rather than staying on a page it can no longer draw.
import { describe, expect, it } from 'vitest';
import { signInThroughConsole, useConsoleStack } from './support/console.ts';
import { ownerEmailOf } from './support/sign-in.ts';

describe('the console, when its session ends elsewhere', () => {
  const env = useConsoleStack();

  it('a 401 from the API brings back the sign-in page, without the signed-in navigation', async () => {
    const tenant = await env.stack.createTenant('Ended Session Corp');
    const email = await ownerEmailOf(tenant);
    const page = await env.newPage();
    await signInThroughConsole(page, env.stack.url, env.smtp, email);
    const session = (await page.context().cookies()).find((cookie) => cookie.name === 'tv_session')!.value;
    // Another client ends the same session; the browser still holds its cookie.
    const ended = await fetch(`${env.stack.url}/sessions/self`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${session}` },
    });
    expect(ended.status).toBe(204);

    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.locator('h1', { hasText: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'E-mail me a sign-in link' }).waitFor();
    expect(await page.getByRole('button', { name: /^Sign out/ }).count()).toBe(0);
    expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link').count()).toBe(0);
  });
});
