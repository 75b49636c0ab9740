import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from './support/smtp.ts';

interface Member {
  id: string;
  tenant_id: string;
  role: 'OWNER' | 'ADMIN';
  user: { id: string; email?: string };
}
interface Page<T> {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number };
  data: T[];
}

describe('tenant members', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let smtp: TestSmtpServer;
  let admins: Member[] = [];

  const list = (query: Record<string, string | number | string[] | undefined> = {}, as = tenant) =>
    as.client.request<Page<Member>>('GET', '/tenants/self/members', { query });

  /** An ADMIN member, the way users become members: invited, e-mailed, accepted. */
  async function addAdmin(email: string): Promise<Member> {
    const invitation = await tenant.client.request<{ email: string }>('POST', '/tenants/self/invitations', {
      body: { email },
    });
    expect(invitation.status).toBe(201);
    const token = linkTokenOf(await smtp.waitFor(invitation.body.email));
    const accepted = await stack.client.request<Member>('POST', '/tenants/invitations/accept', {
      body: { token },
    });
    expect(accepted.status).toBe(201);
    return accepted.body;
  }

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({ SMTP_URL: smtp.url });
    tenant = await stack.createTenant();
    other = await stack.createTenant();
    admins = [await addAdmin('first@example.com'), await addAdmin('second@example.com')];
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  it('lists the OWNER from bootstrap and the ADMINs, each with its user', async () => {
    const page = await list();
    expect(page.status).toBe(200);
    expect(page.body.pagination).toEqual({ total_items: 3, page_number: 1, page_size: 20, total_pages: 1 });
    const [owner, ...rest] = page.body.data;
    expect(owner).toMatchObject({
      tenant_id: tenant.tenantId,
      role: 'OWNER',
      user: { id: tenant.ownerUserId },
    });
    expect(owner!.user.email).toMatch(/^owner-.*@example\.com$/);
    expect(rest.map((member) => [member.role, member.user.email])).toEqual([
      ['ADMIN', 'first@example.com'],
      ['ADMIN', 'second@example.com'],
    ]);
    expect((await list({}, other)).body.pagination.total_items).toBe(1);
  });

  it('filters by user_id (repeatable) and pages', async () => {
    const one = await list({ user_id: admins[0]!.user.id });
    expect(one.body.data.map((member) => member.id)).toEqual([admins[0]!.id]);
    const two = await list({ user_id: [admins[0]!.user.id, tenant.ownerUserId] });
    expect(two.body.data).toHaveLength(2);
    // Another tenant's user is not found here.
    expect((await list({ user_id: admins[0]!.user.id }, other)).body.data).toEqual([]);
    const second = await list({ size: 2, page: 2 });
    expect(second.body.pagination).toMatchObject({
      total_items: 3,
      page_number: 2,
      page_size: 2,
      total_pages: 2,
    });
    expect(second.body.data).toHaveLength(1);
    expect((await list({ size: 50 })).status).toBe(200);
  });

  it('rejects bad paging and filters (400)', async () => {
    for (const query of [
      { size: 0 },
      { size: 51 },
      { page: 0 },
      { size: 'x' },
      { user_id: 'not-a-uuid' },
      { role: 'OWNER' },
    ]) {
      const result = await list(query);
      expect(result.status, JSON.stringify(query)).toBe(400);
    }
  });

  it('never deletes the OWNER (422); unknown and other tenants’ members are 404', async () => {
    const owner = (await list()).body.data.find((member) => member.role === 'OWNER')!;
    const refused = await tenant.client.request<{ status: number; type: string }>(
      'DELETE',
      `/tenants/self/members/${owner.id}`,
    );
    expect(refused.status).toBe(422);
    expect(refused.body.type).toMatch(/unprocessable/);
    expect(
      (await tenant.client.request('DELETE', '/tenants/self/members/00000000-0000-4000-8000-000000000000'))
        .status,
    ).toBe(404);
    expect((await other.client.request('DELETE', `/tenants/self/members/${admins[0]!.id}`)).status).toBe(404);
    expect((await tenant.client.request('DELETE', '/tenants/self/members/nope')).status).toBe(400);
    expect((await list()).body.pagination.total_items).toBe(3);
  });

  it('deletes an ADMIN member: gone from the list, in the audit log, and the address can be invited again', async () => {
    const admin = admins[1]!;
    expect((await tenant.client.request('DELETE', `/tenants/self/members/${admin.id}`)).status).toBe(204);
    expect((await list()).body.data.map((member) => member.id)).not.toContain(admin.id);
    expect((await tenant.client.request('DELETE', `/tenants/self/members/${admin.id}`)).status).toBe(404);
    const logs = await tenant.client.request<
      Page<{ entity_type: string; entity_id: string; operation: string }>
    >('GET', '/logs', { query: { entity_type: 'tenant_member', entity_id: admin.id } });
    expect(logs.body.data.map((log) => log.operation).sort()).toEqual(['create', 'delete']);
    const again = await tenant.client.request('POST', '/tenants/self/invitations', {
      body: { email: 'second@example.com' },
    });
    expect(again.status).toBe(201);
  });

  it('needs tenant:member:read and tenant:member:delete (403)', async () => {
    const readOnly = await tenant.client.applications.create({
      name: 'reader',
      type: 'management',
      permissions: ['tenant:member:read'],
    });
    const client = stack.client.withKey(readOnly.key);
    expect((await client.request('GET', '/tenants/self/members')).status).toBe(200);
    expect((await client.request('DELETE', `/tenants/self/members/${admins[0]!.id}`)).status).toBe(403);
    expect((await stack.client.request('GET', '/tenants/self/members')).status).toBe(401);
  });
});
