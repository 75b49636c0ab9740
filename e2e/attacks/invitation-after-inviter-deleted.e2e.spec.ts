// Invitations from the attacker's side (issue 48, red team round 2, finding R4). The owner gives
// a contractor a management application holding everything, with no expiry: it may invite. The
// contractor invites an address of their own, then the owner deletes the application (204). The
// link already e-mailed is still accepted: the contractor becomes an ADMIN member, outliving the
// application the owner took away. An invitation stands only while its inviter does: an
// application deleted, or no longer holding everything, or a member removed, withdraws it (410).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissions as everyPermission } from '@tokenvault/contracts';
import { startStack, type TestStack, type TestTenant } from '../support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';

interface Answer {
  id: string;
  key: string;
  email: string;
  status?: number;
  detail?: string;
}

let counter = 0;
const newAddress = () => `contractor-${Date.now()}-${++counter}@example.com`;

describe('attack: a pending invitation outlives the application that sent it', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let smtp: TestSmtpServer;

  const fullApplication = async (name: string) => {
    const created = await tenant.client.request<Answer>('POST', '/applications', {
      body: { name, type: 'management', permissions: everyPermission },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const inviteAs = async (apiKey: string) => {
    const email = newAddress();
    const invited = await tenant.client.withKey(apiKey).request<Answer>('POST', '/tenants/self/invitations', {
      body: { email, role: 'ADMIN' },
    });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    return linkTokenOf(await smtp.waitFor(email));
  };
  const accept = (token: string) =>
    stack.client.request<Answer>('POST', '/tenants/invitations/accept', { body: { token } });

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({ SMTP_URL: smtp.url, LOG_LEVEL: 'warn' });
    tenant = await stack.createTenant('Invites Corp');
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  it('the inviting application deleted: its e-mailed link is refused (410), no member is made', async () => {
    const contractor = await fullApplication('Contractor');
    const token = await inviteAs(contractor.key);
    const deleted = await tenant.client.request('DELETE', `/applications/${contractor.id}`);
    expect(deleted.status).toBe(204);

    const accepted = await accept(token);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(410);
    expect(accepted.body.detail).toMatch(/application that sent/);
  });

  it('the inviting application narrowed (a permission taken away): its link is refused (410)', async () => {
    const contractor = await fullApplication('Contractor (narrowed)');
    const token = await inviteAs(contractor.key);
    const narrowed = await tenant.client.request('PUT', `/applications/${contractor.id}`, {
      body: {
        name: 'Contractor (narrowed)',
        permissions: everyPermission.filter((permission) => permission !== 'token:read'),
      },
    });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect((await accept(token)).status).toBe(410);
  });

  it('an inviter left as it was: the link is accepted (201)', async () => {
    const contractor = await fullApplication('Contractor (kept)');
    const token = await inviteAs(contractor.key);
    expect((await accept(token)).status).toBe(201);
  });
});
