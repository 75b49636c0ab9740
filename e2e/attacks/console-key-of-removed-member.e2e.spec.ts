// Also noted in the review: an API key a member created keeps working after the member is
// removed. Decided: a key belongs to the tenant, not to whoever created it (a member leaving must
// not stop the tenant's integrations); what the tenant needs is to see whose keys are whose, so
// that removing a member can go with deleting the keys they made. GET /applications says who
// created each one (`created_by`), and the console's Applications page shows it, by e-mail while
// the creator is a member, as a removed creator after.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { signInThroughConsole, useConsoleStack } from '../support/console.ts';
import { ownerEmailOf, signInClient } from '../support/sign-in.ts';
import { linkTokenOf } from '../support/smtp.ts';
import type { TestTenant } from '../support/stack.ts';

interface Application {
  id: string;
  name: string;
  created_by?: string;
  created_at?: string;
  key?: string;
}

describe('attack: the key of a removed member', () => {
  const env = useConsoleStack();
  let page: Page;
  let tenant: TestTenant;
  let ownerEmail: string;
  const memberEmail = `leaver-${Date.now()}@example.com`;
  let member: { id: string; userId: string; key: string; applicationId: string };

  beforeAll(async () => {
    tenant = await env.stack.createTenant('Keys Corp');
    ownerEmail = await ownerEmailOf(tenant);
    // A member joins, signs in and makes a key of the tenant's.
    expect(
      (await tenant.client.request('POST', '/tenants/self/invitations', { body: { email: memberEmail } }))
        .status,
    ).toBe(201);
    const invitation = await env.smtp.waitFor(memberEmail, (mail) => mail.subject.includes('Invitation'));
    const accepted = await env.stack.client.request<{ id: string; user: { id: string } }>(
      'POST',
      '/tenants/invitations/accept',
      { body: { token: linkTokenOf(invitation) } },
    );
    expect(accepted.status).toBe(201);
    const client = signInClient(env.stack.url);
    expect((await client.askLink(memberEmail)).status).toBe(202);
    const link = await env.smtp.waitFor(memberEmail, (mail) => mail.subject.includes('sign-in'));
    const session = await client.signIn(linkTokenOf(link));
    expect(session.status).toBe(201);
    const created = await env.stack.client.request<Application>('POST', '/applications', {
      headers: { authorization: `Bearer ${session.body.session_token as string}` },
      body: { name: 'Made by the leaver', type: 'private', permissions: ['token:read'] },
    });
    expect(created.status).toBe(201);
    member = {
      id: accepted.body.id,
      userId: accepted.body.user.id,
      key: created.body.key!,
      applicationId: created.body.id,
    };
    page = await env.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
  });

  const creatorCell = (name: string) =>
    page.getByRole('row').filter({ hasText: name }).getByRole('cell').nth(3);

  it('GET /applications and the console say who created each key', async () => {
    const listed = await tenant.client.request<{ data: Application[] }>('GET', '/applications');
    expect(listed.body.data.find((application) => application.id === member.applicationId)).toMatchObject({
      created_by: member.userId,
      created_at: expect.any(String),
    });
    expect(listed.body.data.find((application) => application.id === tenant.applicationId)).toMatchObject({
      created_by: tenant.ownerUserId,
    });
    await signInThroughConsole(page, env.stack.url, env.smtp, ownerEmail);
    await page.getByRole('link', { name: 'Applications' }).click();
    await expect.poll(() => creatorCell('Made by the leaver').innerText()).toBe(memberEmail);
  });

  it('the key outlives its creator’s membership (it is the tenant’s), and the console shows the creator as removed', async () => {
    const removed = await tenant.client.request('DELETE', `/tenants/self/members/${member.id}`);
    expect(removed.status).toBe(204);
    // Decided and documented (docs/decisions.md, Applications and keys): the key still works.
    const tokens = await env.stack.client.request('GET', '/tokens', { apiKey: member.key });
    expect(tokens.status).toBe(200);
    await page.reload();
    await expect
      .poll(() => creatorCell('Made by the leaver').innerText())
      .toBe(`Removed member or application ${member.userId}`);
    // The owner sees it and deletes it: the key ends at once.
    await page.getByRole('button', { name: 'Delete Made by the leaver' }).click();
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'Made by the leaver' }).count()).toBe(0);
    expect((await env.stack.client.request('GET', '/tokens', { apiKey: member.key })).status).toBe(401);
  });
});
