// The attacker's side of POST /tenants/invitations/link, which the accept page calls (no API key)
// to name the tenant an invitation is for. Whoever holds anything but a valid, pending link
// (a forged or altered token, a link replaced by a resend, a used one, an expired one) must learn
// nothing of the tenant: not its name, not the invited address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';
import { TestClock } from '../support/clock.ts';

const secretName = 'Secret Tenant Name Corp';

describe('attack: learn a tenant’s name from an invitation link that is not valid', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let smtp: TestSmtpServer;
  const clock = new TestClock();

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({ SMTP_URL: smtp.url }, { clock });
    tenant = await stack.createTenant(secretName);
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  async function invite(email: string): Promise<{ id: string; token: string }> {
    const before = new Set(smtp.messages);
    const invited = await tenant.client.request<{ id: string }>('POST', '/tenants/self/invitations', {
      body: { email },
    });
    expect(invited.status).toBe(201);
    const mail = await smtp.waitFor(email, (message) => !before.has(message));
    return { id: invited.body.id, token: linkTokenOf(mail) };
  }

  const describeLink = (token: string) =>
    stack.client.request<Record<string, unknown>>('POST', '/tenants/invitations/link', { body: { token } });

  /** The answer says nothing of the tenant or the invitation. */
  function revealsNothing(answer: { status: number; body: unknown }) {
    expect(answer.status).toBeGreaterThanOrEqual(400);
    const text = JSON.stringify(answer.body);
    expect(text).not.toContain(secretName);
    expect(text).not.toContain('@example.com');
  }

  it('a valid link names the tenant (what the accept page shows)', async () => {
    const email = `valid-${Date.now()}@example.com`;
    const { token } = await invite(email);
    const answer = await describeLink(token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ tenant_name: secretName, email });
  });

  it('a forged token (the tenant and invitation ids with a made-up mac) learns nothing', async () => {
    const { token } = await invite(`forged-${Date.now()}@example.com`);
    const [tenantId, invitationId, version, mac] = token.split('.') as [string, string, string, string];
    const forged = `${tenantId}.${invitationId}.${version}.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`;
    revealsNothing(await describeLink(forged));
    revealsNothing(await describeLink(`${tenantId}.${invitationId}.${Number(version) + 1}.${mac}`));
  });

  it('a link replaced by a resend, or deleted, learns nothing', async () => {
    const { id, token } = await invite(`replaced-${Date.now()}@example.com`);
    expect((await tenant.client.request('POST', `/tenants/self/invitations/${id}/resend`)).status).toBe(200);
    revealsNothing(await describeLink(token));
    const second = await invite(`deleted-${Date.now()}@example.com`);
    expect((await tenant.client.request('DELETE', `/tenants/self/invitations/${second.id}`)).status).toBe(
      204,
    );
    revealsNothing(await describeLink(second.token));
  });

  it('a used link learns nothing', async () => {
    const { token } = await invite(`used-${Date.now()}@example.com`);
    const accepted = await stack.client.request('POST', '/tenants/invitations/accept', { body: { token } });
    expect(accepted.status).toBe(201);
    revealsNothing(await describeLink(token));
  });

  it('an expired link learns nothing', async () => {
    const { token } = await invite(`expired-${Date.now()}@example.com`);
    expect((await describeLink(token)).status).toBe(200);
    clock.advance(8 * 24 * 60 * 60 * 1000);
    revealsNothing(await describeLink(token));
  });
});
