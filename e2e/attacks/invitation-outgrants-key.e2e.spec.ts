// Invitations from the attacker's side (issue 48, red team finding 2). The owner gives a contractor
// a key that may only invite people (`tenant:invitation:create`), or a key that may do everything
// but expires in a minute and a half. The contractor invites an address of their own: the
// invitation makes an ADMIN member, whose session holds every permission (every card in full)
// and never expires. No key grants more than it holds, and a key's expiry bounds its holder: an
// invitation is a grant of the ADMIN role, so only a key holding everything, with no expiry, may
// make one or send one again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissions as everyPermission } from '@tokenvault/contracts';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';

interface Answer {
  id: string;
  key: string;
  email?: string;
  errors?: Record<string, string[]>;
}

let counter = 0;
const newAddress = () => `contractor-${Date.now()}-${++counter}@example.com`;

describe('attack: a key invites a member who holds more than the key, and outlives it', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let smtp: TestSmtpServer;
  let inviteOnly: string;
  let expiringFull: string;

  const keyOf = async (name: string, permissions: readonly string[], expiresInMs?: number) => {
    const created = await tenant.client.request<Answer>('POST', '/applications', {
      body: { name, type: 'management', permissions },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    if (expiresInMs === undefined) return created.body.key;
    const key = await tenant.client.request<Answer>('POST', `/applications/${created.body.id}/keys`, {
      body: { expires_at: new Date(Date.now() + expiresInMs).toISOString() },
    });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    return key.body.key;
  };
  const invite = (apiKey: string, email: string) =>
    tenant.client.withKey(apiKey).request<Answer>('POST', '/tenants/self/invitations', {
      body: { email, role: 'ADMIN' },
    });
  const invitedAddresses = async () =>
    (
      await tenant.client.request<{ data: Answer[] }>('GET', '/tenants/self/invitations', {
        query: { size: 100 },
      })
    ).body.data.map((invitation) => invitation.email);

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({ SMTP_URL: smtp.url, LOG_LEVEL: 'warn' });
    tenant = await stack.createTenant('Invites Corp');
    inviteOnly = await keyOf('Invites only', [
      'tenant:invitation:create',
      'tenant:invitation:update',
      'tenant:invitation:read',
    ]);
    expiringFull = await keyOf('Everything, for 90 s', everyPermission, 90_000);
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  it('a key holding only tenant:invitation:create cannot invite an ADMIN (403 naming body.role, nothing sent)', async () => {
    const email = newAddress();
    const refused = await invite(inviteOnly, email);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.role']);
    expect(refused.body.errors!['body.role']!.join(' ')).toContain('token:read');
    expect(await invitedAddresses()).not.toContain(email);
  });

  it('a key that expires cannot invite, even holding every permission (a member outlives any key)', async () => {
    const email = newAddress();
    const refused = await invite(expiringFull, email);
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(Object.keys(refused.body.errors ?? {})).toEqual(['body.role']);
    expect(refused.body.errors!['body.role']!.join(' ')).toMatch(/expires/);
    expect(await invitedAddresses()).not.toContain(email);
  });

  it('neither may send an invitation again (a resend is a new link to the same seat)', async () => {
    const invited = await invite(tenant.apiKey, newAddress());
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    for (const apiKey of [inviteOnly, expiringFull]) {
      const resent = await tenant.client
        .withKey(apiKey)
        .request<Answer>('POST', `/tenants/self/invitations/${invited.body.id}/resend`);
      expect(resent.status, JSON.stringify(resent.body)).toBe(403);
      expect(Object.keys(resent.body.errors ?? {})).toEqual(['body.role']);
    }
    const byOwner = await tenant.client.request(
      'POST',
      `/tenants/self/invitations/${invited.body.id}/resend`,
    );
    expect(byOwner.status).toBe(200);
  });
});
