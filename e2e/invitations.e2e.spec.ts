import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueue, invitationMailQueueName } from '@tokenvault/jobs';
import { invitationMailJobId, type InvitationMailJob } from '@tokenvault/mail';
import { memberIdOfInvitation } from '@tokenvault/tenancy';
import { eventCount, startStack, type TestStack, type TestTenant } from './support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from './support/smtp.ts';
import { TestClock } from './support/clock.ts';
import { createLogger } from '@tokenvault/platform';
import { eventually } from '@tokenvault/platform/testing';

interface Invitation {
  id: string;
  tenant_id: string;
  email: string;
  status: 'PENDING' | 'EXPIRED';
  expires_at: string;
  created_at: string;
  created_by: string;
}
interface Member {
  id: string;
  role: string;
  user: { id: string; email?: string; first_name?: string; last_name?: string };
}
interface Page<T> {
  pagination: { total_items: number };
  data: T[];
}

const hours72 = 72 * 60 * 60 * 1000;
let counter = 0;
const newAddress = () => `invitee-${Date.now()}-${++counter}@Example.COM`;

describe('tenant invitations, with e-mail over SMTP', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let smtp: TestSmtpServer;
  const clock = new TestClock();

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({ SMTP_URL: smtp.url, PUBLIC_URL: 'https://vault.example.test' }, { clock });
    tenant = await stack.createTenant('Acme <Corp> & Sons');
    other = await stack.createTenant('Other');
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  const invite = async (email = newAddress(), as = tenant) => {
    const created = await as.client.request<Invitation>('POST', '/tenants/self/invitations', {
      body: { email },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const accept = (token: string, names: { first_name?: string; last_name?: string } = {}) =>
    stack.client.request<Member & { status?: number; detail?: string }>(
      'POST',
      '/tenants/invitations/accept',
      {
        body: { token, ...names },
      },
    );
  const mailTo = (email: string, predicate?: Parameters<TestSmtpServer['waitFor']>[1]) =>
    smtp.waitFor(
      email.replace(/@.*/, (domain) => domain.toLowerCase()),
      predicate,
    );
  const members = async (as = tenant) =>
    (await as.client.request<Page<Member>>('GET', '/tenants/self/members', { query: { size: 50 } })).body
      .data;

  it('invites, e-mails the link, and accepting it adds an ADMIN member and removes the invitation', async () => {
    const email = newAddress();
    const invitation = await invite(email);
    expect(invitation).toMatchObject({
      tenant_id: tenant.tenantId,
      email: email.replace('@Example.COM', '@example.com'),
      status: 'PENDING',
      created_by: tenant.applicationId,
    });
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(hours72);
    expect((await tenant.client.request('GET', `/tenants/self/invitations/${invitation.id}`)).body).toEqual(
      invitation,
    );

    const mail = await mailTo(invitation.email);
    expect(mail.subject).toContain('Acme <Corp> & Sons');
    expect(mail.text).toContain('“Management (bootstrap)” invited you to join “Acme <Corp> & Sons”');
    expect(mail.text).toContain(new Date(invitation.expires_at).toUTCString());
    expect(mail.text).toMatch(/https:\/\/vault\.example\.test\/tenants\/invitations\/accept#token=/);
    expect(mail.html).toContain('Acme &lt;Corp&gt; &amp; Sons');
    expect(mail.html).not.toContain('<Corp>');
    const token = linkTokenOf(mail);

    const accepted = await accept(token, { first_name: 'Ada', last_name: 'Lovelace' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body).toMatchObject({
      tenant_id: tenant.tenantId,
      role: 'ADMIN',
      user: { email: invitation.email, first_name: 'Ada', last_name: 'Lovelace' },
    });
    const listed = (await members()).find((member) => member.id === accepted.body.id);
    expect(listed).toMatchObject({
      role: 'ADMIN',
      user: { id: accepted.body.user.id, email: invitation.email },
    });
    expect((await tenant.client.request('GET', `/tenants/self/invitations/${invitation.id}`)).status).toBe(
      404,
    );

    // The link is single-use.
    const again = await accept(token);
    expect(again.status).toBe(410);
    expect((await members()).filter((member) => member.user.email === invitation.email)).toHaveLength(1);

    // Every step is in the audit log; no log line holds the token.
    const logs = await tenant.client.request<
      Page<{ entity_type: string; message: string; entity_id: string }>
    >('GET', '/logs', { query: { size: 100 } });
    const messages = logs.body.data.map((log) => `${log.entity_type}:${log.message}:${log.entity_id}`);
    expect(messages).toContain(`tenant_invitation:Tenant invitation created:${invitation.id}`);
    expect(messages).toContain(`tenant_invitation:Tenant invitation accepted:${invitation.id}`);
    expect(messages).toContain(`tenant_member:Tenant member added:${accepted.body.id}`);
    expect(stack.logs.join('\n')).not.toContain(token.split('.').at(-1));
  });

  it('refuses a second invitation of a member or of an invited address (409)', async () => {
    const email = newAddress();
    await invite(email);
    for (const variant of [email, email.toUpperCase()]) {
      const again = await tenant.client.request('POST', '/tenants/self/invitations', {
        body: { email: variant },
      });
      expect(again.status).toBe(409);
    }
    const ownerEmail = (await members()).find((member) => member.role === 'OWNER')!.user.email!;
    const owner = await tenant.client.request('POST', '/tenants/self/invitations', {
      body: { email: ownerEmail },
    });
    expect(owner.status).toBe(409);
    // Another tenant may invite the same address.
    await invite(email, other);
  });

  it('five invitations of one new address at the same moment: one is created, four are 409', async () => {
    const email = newAddress();
    const responses = await Promise.all(
      Array.from({ length: 5 }, () =>
        tenant.client.request<Invitation>('POST', '/tenants/self/invitations', { body: { email } }),
      ),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const listed = await tenant.client.request<Page<Invitation>>('GET', '/tenants/self/invitations', {
      query: { size: 100 },
    });
    expect(listed.body.data.filter((invitation) => invitation.email === email.toLowerCase())).toHaveLength(1);
  });

  it('resend: the first link fails, the second works', async () => {
    const invitation = await invite();
    const first = linkTokenOf(await mailTo(invitation.email));
    clock.advance(60_000);
    const resent = await tenant.client.request<Invitation>(
      'POST',
      `/tenants/self/invitations/${invitation.id}/resend`,
    );
    expect(resent.status).toBe(200);
    expect(resent.body.status).toBe('PENDING');
    expect(Date.parse(resent.body.expires_at)).toBeGreaterThan(Date.parse(invitation.expires_at));
    const second = linkTokenOf(await mailTo(invitation.email, (mail) => linkTokenOf(mail) !== first));
    expect(second).not.toBe(first);

    const stale = await accept(first);
    expect(stale.status).toBe(410);
    expect(stale.body.detail).toMatch(/replaced/);
    expect((await accept(second)).status).toBe(201);
  });

  it('delete: the link fails and nothing changes', async () => {
    const invitation = await invite();
    const token = linkTokenOf(await mailTo(invitation.email));
    expect((await tenant.client.request('DELETE', `/tenants/self/invitations/${invitation.id}`)).status).toBe(
      204,
    );
    expect((await tenant.client.request('GET', `/tenants/self/invitations/${invitation.id}`)).status).toBe(
      404,
    );
    expect((await tenant.client.request('DELETE', `/tenants/self/invitations/${invitation.id}`)).status).toBe(
      404,
    );
    const before = await members();
    expect((await accept(token)).status).toBe(410);
    expect(await members()).toEqual(before);
  });

  it('expiry: EXPIRED after 72 hours, the link fails, and resend makes it PENDING for 72 more hours', async () => {
    const invitation = await invite();
    const token = linkTokenOf(await mailTo(invitation.email));
    clock.advance(hours72 - 60_000);
    expect(
      (await tenant.client.request<Invitation>('GET', `/tenants/self/invitations/${invitation.id}`)).body
        .status,
    ).toBe('PENDING');
    clock.advance(60_000);
    const expired = await tenant.client.request<Invitation>(
      'GET',
      `/tenants/self/invitations/${invitation.id}`,
    );
    expect(expired.body.status).toBe('EXPIRED');
    const expiredList = await tenant.client.request<Page<Invitation>>('GET', '/tenants/self/invitations', {
      query: { status: 'EXPIRED', size: 100 },
    });
    expect(expiredList.body.data.map((item) => item.id)).toContain(invitation.id);
    const pendingList = await tenant.client.request<Page<Invitation>>('GET', '/tenants/self/invitations', {
      query: { status: 'PENDING', size: 100 },
    });
    expect(pendingList.body.data.map((item) => item.id)).not.toContain(invitation.id);
    const late = await accept(token);
    expect(late.status).toBe(410);
    expect(late.body.detail).toMatch(/expired/);

    const resent = await tenant.client.request<Invitation>(
      'POST',
      `/tenants/self/invitations/${invitation.id}/resend`,
    );
    expect(resent.status).toBe(200);
    expect(resent.body.status).toBe('PENDING');
    expect(Math.abs(Date.parse(resent.body.expires_at) - (clock.now().getTime() + hours72))).toBeLessThan(
      10_000,
    );
    const fresh = linkTokenOf(await mailTo(invitation.email, (mail) => linkTokenOf(mail) !== token));
    expect((await accept(fresh)).status).toBe(201);
  });

  it('the SMTP server refuses the first two attempts: the e-mail still arrives exactly once', async () => {
    smtp.refuseNext(2);
    const refusedBefore = smtp.refused();
    const invitation = await invite();
    const mail = await mailTo(invitation.email);
    expect(smtp.refused() - refusedBefore).toBe(2);
    const jobId = invitationMailJobId({
      tenant_id: tenant.tenantId,
      invitation_id: invitation.id,
      link_version: 1,
    });
    const queue = createQueue<InvitationMailJob>(
      invitationMailQueueName,
      stack.config,
      createLogger('silent'),
    );
    try {
      const job = await eventually(async () => {
        const found = await queue.getJob(jobId);
        expect(await found?.getState()).toBe('completed');
        return found!;
      });
      expect(job.attemptsMade).toBe(3);
      expect(JSON.stringify(job.data)).not.toContain(linkTokenOf(mail));
      expect(Object.keys(job.data).sort()).toEqual(['invitation_id', 'link_version', 'tenant_id']);
      // A duplicate enqueue of the same link is ignored.
      await queue.add('send', job.data, { jobId });
      expect(await queue.getJobCountByTypes('waiting', 'active', 'delayed')).toBe(0);
    } finally {
      await queue.close();
    }
    expect(smtp.messages.filter((message) => message.to.includes(invitation.email))).toHaveLength(1);
  });

  it('a bad name is refused before anything is written, and the same link then works', async () => {
    const invitation = await invite();
    const token = linkTokenOf(await mailTo(invitation.email));
    const before = await eventCount(stack);
    for (const first_name of ['\u0000', 'Ada\ud800', 'Ada\u202eecalevol', 'x'.repeat(201)]) {
      const refused = await accept(token, { first_name });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(Object.keys((refused.body as unknown as { errors: object }).errors)).toEqual([
        'body.first_name',
      ]);
    }
    const badLast = await accept(token, { first_name: 'Ada', last_name: 'Love\u0000lace' });
    expect(badLast.status).toBe(400);
    expect(await eventCount(stack)).toBe(before);
    expect((await tenant.client.request('GET', `/tenants/self/invitations/${invitation.id}`)).status).toBe(
      200,
    );
    const accepted = await accept(token, { first_name: 'Ada', last_name: 'Lovelace' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.user).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace' });
  });

  it('caps e-mails per invitation (3 per 10 minutes): past it 429 with Retry-After, and nothing appended', async () => {
    const invitation = await invite();
    const resendOnce = () =>
      tenant.client.request<{ status: number }>('POST', `/tenants/self/invitations/${invitation.id}/resend`);
    const answers = await Promise.all(Array.from({ length: 30 }, resendOnce));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429)).toHaveLength(28);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(500);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(600);
    expect(JSON.stringify(refused.body)).not.toContain(invitation.email.split('@')[0]);
    const events = await stack.service.runtime.ownerPool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM es_events WHERE stream_id = $1`,
      [`tenancy.invitation-${tenant.tenantId}-${invitation.id}`],
    );
    expect(events.rows[0]?.count).toBe(3);
    // The newest link's e-mail arrives; earlier ones may be skipped as stale: three at most.
    await mailTo(invitation.email, (mail) => linkTokenOf(mail).split('.')[2] === '3');
    expect(smtp.messages.filter((mail) => mail.to.includes(invitation.email)).length).toBeLessThanOrEqual(3);
    // Redis holds no address: the counters are keyed by a hash.
    const keys = await stack.service.runtime.redis.keys('*invitation-mail-limit*');
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toContain(invitation.email.split('@')[0]);
  });

  it('caps e-mails per address across the tenant (10 per hour), however many invitations', async () => {
    const email = newAddress();
    for (let sent = 0; sent < 10; sent++) {
      const invitation = await invite(email);
      expect(
        (await tenant.client.request('DELETE', `/tenants/self/invitations/${invitation.id}`)).status,
      ).toBe(204);
    }
    const before = await eventCount(stack);
    const refused = await tenant.client.request('POST', '/tenants/self/invitations', { body: { email } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect(await eventCount(stack)).toBe(before);
    // Another tenant's allowance for the address is its own.
    expect(
      (await other.client.request('POST', '/tenants/self/invitations', { body: { email } })).status,
    ).toBe(201);
  });

  it('two acceptances of one link at the same moment make one member', async () => {
    const invitation = await invite();
    const token = linkTokenOf(await mailTo(invitation.email));
    const results = await Promise.all([accept(token), accept(token), accept(token)]);
    const statuses = results.map((result) => result.status);
    expect(statuses).toContain(201);
    for (const status of statuses) expect([201, 409, 410]).toContain(status);
    const created = results.filter((result) => result.status === 201).map((result) => result.body.id);
    expect(new Set(created).size).toBe(1);
    await eventually(async () =>
      expect((await members()).filter((member) => member.user.email === invitation.email)).toHaveLength(1),
    );
    expect((await accept(token)).status).toBe(410);
  });

  it('an acceptance that stopped after its commit point is completed by a retry of the same link', async () => {
    const invitation = await invite();
    const token = linkTokenOf(await mailTo(invitation.email));
    const [, , version] = token.split('.');
    // As if the process died right after appending InvitationAccepted: no user, no member yet.
    const memberId = memberIdOfInvitation(tenant.tenantId, invitation.id);
    await stack.service.runtime.store.append(
      `tenancy.invitation-${tenant.tenantId}-${invitation.id}`,
      [
        {
          type: 'InvitationAccepted',
          data: {
            invitation_id: invitation.id,
            tenant_id: tenant.tenantId,
            link_version: Number(version),
            member_id: memberId,
            user_id: '00000000-0000-4000-8000-000000000000',
            accepted_at: new Date().toISOString(),
          },
          metadata: { tenant_id: tenant.tenantId, actor_type: 'user' },
        },
      ],
      { expectedRevision: 'any' },
    );
    const retried = await accept(token);
    expect(retried.status).toBe(201);
    expect(retried.body).toMatchObject({ id: memberId, role: 'ADMIN' });
    expect((await members()).map((member) => member.id)).toContain(memberId);
    // Complete now: the link is used.
    expect((await accept(token)).status).toBe(410);
  });

  it('a resend between the check and the acceptance fails the acceptance and writes nothing', async () => {
    const invitation = await invite();
    const token = linkTokenOf(await mailTo(invitation.email));
    await tenant.client.request('POST', `/tenants/self/invitations/${invitation.id}/resend`);
    const before = (await members()).length;
    expect((await accept(token)).status).toBe(410);
    expect((await members()).length).toBe(before);
  });

  it('validates e-mail addresses per RFC 5322 (a bare addr-spec)', async () => {
    const valid = [
      'simple@example.com',
      'very.common@example.com',
      'x@example.com',
      'long.email-address-with-hyphens@and.subdomains.example.com',
      'user.name+tag+sorting@example.com',
      'name/surname@example.com',
      '"john..doe"@example.org',
      '" "@example.org',
      'mailhost!username@example.org',
      'user%example.com@example.org',
      "o'reilly@example.ie",
      "#!$%&'*+-/=?^_`{}|~@example.org",
      'admin@localhost',
      'user@[192.168.2.1]',
      'user-@example.org',
    ];
    const invalid = [
      '',
      'plainaddress',
      'Abc.example.com',
      '@example.com',
      'user@',
      'A@b@c@example.com',
      'a"b(c)d,e:f;g<h>i[j\\k]l@example.com',
      'just"not"right@example.com',
      'this is"not\\allowed@example.com',
      'john..doe@example.com',
      '.john@example.com',
      'john.@example.com',
      'john@example..com',
      'John Doe <john@example.com>',
      'john@example.com (John)',
      'group: john@example.com;',
      'john@example.com, jane@example.com',
      ' john@example.com',
      'john@example.com\n',
      `${'x'.repeat(65)}@example.com`,
      'jöhn@example.com',
      'john@exa mple.com',
    ];
    expect(valid.length + invalid.length).toBeGreaterThanOrEqual(20);
    for (const email of valid) {
      const created = await tenant.client.request<Invitation>('POST', '/tenants/self/invitations', {
        body: { email },
      });
      expect(created.status, `${email} should be accepted: ${JSON.stringify(created.body)}`).toBe(201);
      expect(created.body.email).toBe(email);
    }
    for (const email of invalid) {
      const rejected = await tenant.client.request<{ errors: Record<string, string[]> }>(
        'POST',
        '/tenants/self/invitations',
        { body: { email } },
      );
      expect(rejected.status, `${JSON.stringify(email)} should be rejected`).toBe(400);
      expect(rejected.body.errors['body.email']).toBeDefined();
    }
    for (const body of [{}, { email: 42 }, { email: 'a@example.com', role: 'OWNER' }]) {
      expect((await tenant.client.request('POST', '/tenants/self/invitations', { body })).status).toBe(400);
    }
  });

  it('bad input and other tenants: 400, 404, 403', async () => {
    const invitation = await invite();
    const list = (query: Record<string, string | number | undefined>) =>
      tenant.client.request('GET', '/tenants/self/invitations', { query });
    for (const query of [{ size: 0 }, { size: 101 }, { page: 0 }, { status: 'ACCEPTED' }]) {
      expect((await list(query)).status).toBe(400);
    }
    expect((await list({ size: 100 })).status).toBe(200);
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const [method, path] of [
      ['GET', `/tenants/self/invitations/${unknown}`],
      ['DELETE', `/tenants/self/invitations/${unknown}`],
      ['POST', `/tenants/self/invitations/${unknown}/resend`],
      ['GET', `/tenants/self/invitations/${invitation.id}`],
      ['DELETE', `/tenants/self/invitations/${invitation.id}`],
      ['POST', `/tenants/self/invitations/${invitation.id}/resend`],
    ] as const) {
      const as = path.includes(invitation.id) ? other : tenant;
      expect((await as.client.request(method, path)).status, `${method} ${path}`).toBe(404);
    }
    expect((await tenant.client.request('GET', '/tenants/self/invitations/not-a-uuid')).status).toBe(400);
    const otherList = await other.client.request<Page<Invitation>>('GET', '/tenants/self/invitations', {
      query: { size: 100 },
    });
    expect(otherList.body.data.map((item) => item.id)).not.toContain(invitation.id);

    // Resend needs create AND update.
    const createOnly = await tenant.client.applications.create({
      name: 'inviter',
      type: 'management',
      permissions: ['tenant:invitation:create'],
    });
    const resend = await stack.client
      .withKey(createOnly.key)
      .request('POST', `/tenants/self/invitations/${invitation.id}/resend`);
    expect(resend.status).toBe(403);

    for (const token of ['', 'nonsense', `${tenant.tenantId}.${invitation.id}.1.${'A'.repeat(43)}`]) {
      const result = await accept(token);
      expect([400, 410]).toContain(result.status);
    }
    expect((await stack.client.request('POST', '/tenants/invitations/accept', { body: {} })).status).toBe(
      400,
    );
  });
});

describe('the page an invitation e-mail links to', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it('serves a page whose only script is its own, and that never leaks the token as a referrer', async () => {
    const response = await fetch(`${stack.url}/tenants/invitations/accept`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const page = await response.text();
    // The token is read by the script from the address's fragment, which never reaches a server.
    expect(page).toContain('location.hash');
    const script = /<script>([\s\S]*)<\/script>/.exec(page)?.[1] ?? '';
    // It posts the token in a body (to name the tenant, then to accept), never in an address.
    expect(script).toContain("post('/tenants/invitations/link', { token })");
    expect(script).toContain('post(location.pathname, body)');
    expect(script).toContain("method: 'POST'");
    const { createHash } = await import('node:crypto');
    const hash = createHash('sha256').update(script).digest('base64');
    expect(response.headers.get('content-security-policy')).toContain(`script-src 'sha256-${hash}'`);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(response.headers.get('content-security-policy')).not.toContain('unsafe-inline');
  });
});
