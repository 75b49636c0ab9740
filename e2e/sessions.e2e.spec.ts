import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from './support/smtp.ts';
import { TestClock } from './support/clock.ts';
import { startGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';

interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}
interface CreatedSession {
  session_token: string;
  expires_at: string;
  user: { id: string; email: string; first_name?: string; last_name?: string };
  memberships: { tenant_id: string; tenant_name: string; role: string }[];
}

let counter = 0;
const newAddress = (label: string) => `${label}-${Date.now()}-${++counter}@example.com`;

/** fetch with the headers a test chooses: a key, a bearer session, a cookie, an Origin. */
async function call<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  options: {
    key?: string;
    bearer?: string;
    cookie?: string;
    tenant?: string;
    headers?: Record<string, string>;
    body?: unknown;
  } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['svc-api-key'] = options.key;
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.cookie) headers.cookie = `tv_session=${options.cookie}`;
  if (options.tenant) headers['svc-tenant-id'] = options.tenant;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  let body: unknown = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = {};
  }
  return { status: response.status, headers: response.headers, body: body as T, text };
}

describe('members sign in by e-mail and act with sessions', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let other: TestTenant;
  let smtp: TestSmtpServer;
  let ownerEmail: string;
  const clock = new TestClock();

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack(
      {
        SMTP_URL: smtp.url,
        PUBLIC_URL: 'https://vault.example.test',
        SIGN_IN_EMAILS_PER_ADDRESS_CLIENT_PER_HOUR: '1000',
        SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR: '1000',
        SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR: '10000',
      },
      { clock },
    );
    tenant = await stack.createTenant('Acme');
    other = await stack.createTenant('Other Corp');
    const members = await call<{ data: { user: { id: string; email: string } }[] }>(
      stack.url,
      'GET',
      '/tenants/self/members',
      { key: tenant.apiKey },
    );
    ownerEmail = members.body.data.find((member) => member.user.id === tenant.ownerUserId)!.user.email;
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  /**
   * The tv_sign_in cookie of this test's client, kept as a browser keeps it (or curl -c/-b): a
   * link works only with the cookie of the request that asked for it.
   */
  let signInCookie: string | undefined;
  const withSignInCookie = (): Record<string, string> => (signInCookie ? { cookie: signInCookie } : {});
  const requestLink = async (email: string) => {
    const answer = await call(stack.url, 'POST', '/sessions/email', {
      body: { email },
      headers: withSignInCookie(),
    });
    const set = answer.headers.getSetCookie().find((cookie) => cookie.startsWith('tv_sign_in='));
    if (set) signInCookie = set.split(';')[0];
    return answer;
  };
  const createSession = (token: string) =>
    call<CreatedSession>(stack.url, 'POST', '/sessions', { body: { token }, headers: withSignInCookie() });
  const mailsTo = (email: string) => smtp.messages.filter((mail) => mail.to.includes(email.toLowerCase()));
  /** Asks for a link and waits for the e-mail that brings it (the n-th to this address). */
  const linkFor = async (email: string) => {
    const before = mailsTo(email).length;
    expect((await requestLink(email)).status).toBe(202);
    const mail = await smtp.waitFor(email.toLowerCase(), (m) => mailsTo(email).indexOf(m) >= before);
    return linkTokenOf(mail);
  };
  const signIn = async (email: string) => {
    const created = await createSession(await linkFor(email));
    expect(created.status, created.text).toBe(201);
    return created;
  };
  /** A new ADMIN member of the tenant, through an invitation accepted over its e-mailed link. */
  const newMember = async (of: TestTenant) => {
    const email = newAddress('member');
    const invited = await call(stack.url, 'POST', '/tenants/self/invitations', {
      key: of.apiKey,
      body: { email },
    });
    expect(invited.status, invited.text).toBe(201);
    const mail = await smtp.waitFor(email, (m) => m.subject.includes('Invitation'));
    const accepted = await call<{ id: string }>(stack.url, 'POST', '/tenants/invitations/accept', {
      body: { token: linkTokenOf(mail), first_name: 'Mem' },
    });
    expect(accepted.status, accepted.text).toBe(201);
    return { email, memberId: accepted.body.id };
  };

  it('e-mails a single-use link to PUBLIC_URL/sign-in; it signs in once, with a cookie and a bearer token', async () => {
    const token = await linkFor(ownerEmail);
    const mail = mailsTo(ownerEmail).at(-1)!;
    expect(mail.text).toContain('https://vault.example.test/sign-in#token=');
    // The link is bound to this client by a nonce cookie (docs/decisions.md, Members' sessions).
    const asked = await requestLink(newAddress('anyone'));
    const nonce = asked.headers.getSetCookie().find((cookie) => cookie.startsWith('tv_sign_in='))!;
    expect(nonce.split(';')[0]).toBe(signInCookie);
    expect(nonce).toMatch(
      /^tv_sign_in=[A-Za-z0-9_-]{43}; Path=\/sessions; HttpOnly; SameSite=Lax; Max-Age=900; Secure$/,
    );
    const created = await createSession(token);
    expect(created.status, created.text).toBe(201);
    expect(created.body.session_token).toMatch(/^tvs_/);
    expect(created.body.user).toMatchObject({ id: tenant.ownerUserId, email: ownerEmail });
    expect(created.body.memberships).toEqual([
      { tenant_id: tenant.tenantId, tenant_name: 'Acme', role: 'OWNER' },
    ]);
    expect(Date.parse(created.body.expires_at)).toBeGreaterThan(Date.now() + 11 * 3600_000);
    const cookie = created.headers.get('set-cookie')!;
    expect(cookie).toContain(`tv_session=${created.body.session_token}`);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).toMatch(/Secure/);

    const self = await call<CreatedSession>(stack.url, 'GET', '/sessions/self', {
      bearer: created.body.session_token,
    });
    expect(self.status).toBe(200);
    expect(self.body.user.id).toBe(tenant.ownerUserId);
    expect(self.body).not.toHaveProperty('session_token');
    const byCookie = await call(stack.url, 'GET', '/sessions/self', { cookie: created.body.session_token });
    expect(byCookie.status).toBe(200);

    const again = await createSession(token);
    expect(again.status).toBe(410);
    expect(again.headers.get('content-type')).toContain('application/problem+json');
    const malformed = await call<{ errors: Record<string, string[]> }>(stack.url, 'POST', '/sessions', {
      body: { token: 'not-a-token' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toHaveProperty(['body.token']);
    // Neither the link nor the session token ever reaches a log line.
    const logs = stack.logs.join('');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(created.body.session_token);
    expect(logs).not.toContain(ownerEmail);
  });

  it('a newer link replaces the older one, and a link expires after 15 minutes (injectable clock)', async () => {
    const first = await linkFor(ownerEmail);
    const second = await linkFor(ownerEmail);
    expect(second).not.toBe(first);
    expect((await createSession(first)).status).toBe(410);
    clock.advance(16 * 60_000);
    try {
      expect((await createSession(second)).status).toBe(410);
    } finally {
      clock.advance(-16 * 60_000);
    }
  });

  it("a member's session acts on the API: creates a token, reads it, and the log says actor_type user", async () => {
    const session = (await signIn(ownerEmail)).body.session_token;
    const created = await call<{ id: string }>(stack.url, 'POST', '/tokens', {
      bearer: session,
      body: { type: 'token', data: { secret: 'by a member' } },
    });
    expect(created.status, created.text).toBe(201);
    const read = await call<{ data: unknown }>(stack.url, 'GET', `/tokens/${created.body.id}`, {
      bearer: session,
    });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ secret: 'by a member' });
    const logs = await call<{
      data: { entity_id: string; operation: string; actor_type: string; actor_id: string }[];
    }>(stack.url, 'GET', `/logs?entity_id=${created.body.id}`, { bearer: session });
    expect(logs.status, logs.text).toBe(200);
    const rows = logs.body.data.filter((row) => row.entity_id === created.body.id);
    expect(rows.map((row) => row.operation).sort()).toEqual(['create', 'read']);
    for (const row of rows) {
      expect(row.actor_type).toBe('user');
      expect(row.actor_id).toBe(tenant.ownerUserId);
    }
    // OWNER and ADMIN hold every permission: a management route too.
    expect((await call(stack.url, 'GET', '/applications', { bearer: session })).status).toBe(200);
    const application = await call<{ key: string; permissions: string[] }>(
      stack.url,
      'POST',
      '/applications',
      {
        bearer: session,
        body: { name: 'made by a member', type: 'management', permissions: ['tenant:read', 'token:read'] },
      },
    );
    expect(application.status, application.text).toBe(201);
    expect((await call(stack.url, 'GET', '/tenants/self', { key: application.body.key })).status).toBe(200);
  });

  it('with a key, a session is not read (the key acts); alone, an unknown or malformed session is a 401', async () => {
    const session = (await signIn(ownerEmail)).body.session_token;
    const applications = await call<{ data: { id: string }[] }>(stack.url, 'GET', '/applications', {
      key: other.apiKey,
      bearer: session,
      cookie: session,
    });
    expect(applications.status, applications.text).toBe(200);
    expect(applications.body.data.map((application) => application.id)).toContain(other.applicationId);
    expect((await call(stack.url, 'GET', '/tokens', { key: 'key_not_valid', bearer: session })).status).toBe(
      401,
    );
    expect((await call(stack.url, 'GET', '/tokens', { bearer: `tvs_${'A'.repeat(43)}` })).status).toBe(401);
    expect((await call(stack.url, 'GET', '/tokens', { bearer: 'garbage' })).status).toBe(401);
  });

  it('refuses a cookie-authenticated unsafe request from another origin; bearer requests are not affected', async () => {
    const session = (await signIn(ownerEmail)).body.session_token;
    const body = { type: 'token', data: 'x' };
    const crossSite = await call(stack.url, 'POST', '/tokens', {
      cookie: session,
      body,
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.status).toBe(403);
    const foreignOrigin = await call(stack.url, 'POST', '/tokens', {
      cookie: session,
      body,
      headers: { origin: 'https://evil.example' },
    });
    expect(foreignOrigin.status).toBe(403);
    expect((await call(stack.url, 'POST', '/tokens', { cookie: session, body })).status).toBe(403);
    const sameOrigin = await call(stack.url, 'POST', '/tokens', {
      cookie: session,
      body,
      headers: { 'sec-fetch-site': 'same-origin' },
    });
    expect(sameOrigin.status, sameOrigin.text).toBe(201);
    expect(
      (
        await call(stack.url, 'POST', '/tokens', {
          cookie: session,
          body,
          headers: { origin: 'https://vault.example.test' },
        })
      ).status,
    ).toBe(201);
    const bearer = await call(stack.url, 'POST', '/tokens', {
      bearer: session,
      body,
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(bearer.status).toBe(201);
    // A safe method with the cookie from anywhere is only a read (no change is made).
    expect((await call(stack.url, 'GET', '/tokens', { cookie: session })).status).toBe(200);
  });

  it("a session of tenant A cannot reach tenant B with SVC-TENANT-ID (403, nothing of B's in the body)", async () => {
    const session = (await signIn(ownerEmail)).body.session_token;
    const secret = await call<{ id: string }>(stack.url, 'POST', '/tokens', {
      key: other.apiKey,
      body: { type: 'token', data: 'of B' },
    });
    for (const path of ['/tenants/self', '/tokens', `/tokens/${secret.body.id}`]) {
      const answer = await call(stack.url, 'GET', path, { bearer: session, tenant: other.tenantId });
      expect(answer.status).toBe(403);
      expect(answer.text).not.toContain(other.tenantId);
      expect(answer.text).not.toContain('Other Corp');
      expect(answer.text).not.toContain(secret.body.id);
    }
    const malformed = await call(stack.url, 'GET', '/tokens', { bearer: session, tenant: 'nope' });
    expect(malformed.status).toBe(400);
    const own = await call<{ id: string }>(stack.url, 'GET', '/tenants/self', {
      bearer: session,
      tenant: tenant.tenantId,
    });
    expect(own.status).toBe(200);
    expect(own.body.id).toBe(tenant.tenantId);
  });

  it('a user with several memberships names the tenant in SVC-TENANT-ID (400 without it)', async () => {
    const member = await newMember(tenant);
    const invited = await call(stack.url, 'POST', '/tenants/self/invitations', {
      key: other.apiKey,
      body: { email: member.email },
    });
    expect(invited.status).toBe(201);
    const mail = await smtp.waitFor(member.email, (m) => m.subject.includes('Other Corp'));
    expect(
      (await call(stack.url, 'POST', '/tenants/invitations/accept', { body: { token: linkTokenOf(mail) } }))
        .status,
    ).toBe(201);
    const session = await signIn(member.email);
    expect(session.body.memberships.map((m) => m.tenant_id).sort()).toEqual(
      [tenant.tenantId, other.tenantId].sort(),
    );
    const token = session.body.session_token;
    expect((await call(stack.url, 'GET', '/tenants/self', { bearer: token })).status).toBe(400);
    const inOther = await call<{ id: string }>(stack.url, 'GET', '/tenants/self', {
      bearer: token,
      tenant: other.tenantId,
    });
    expect(inOther.body.id).toBe(other.tenantId);
  });

  it('signing out ends the session at once; a user can end all their sessions', async () => {
    const first = (await signIn(ownerEmail)).body.session_token;
    const second = (await signIn(ownerEmail)).body.session_token;
    expect((await call(stack.url, 'GET', '/tokens', { bearer: first })).status).toBe(200);
    const out = await call(stack.url, 'DELETE', '/sessions/self', { bearer: first });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await call(stack.url, 'GET', '/tokens', { bearer: first })).status).toBe(401);
    expect((await call(stack.url, 'GET', '/sessions/self', { bearer: first })).status).toBe(401);
    expect((await call(stack.url, 'GET', '/tokens', { bearer: second })).status).toBe(200);
    const third = (await signIn(ownerEmail)).body.session_token;
    expect(
      (await call(stack.url, 'DELETE', '/sessions/self?everywhere=true', { bearer: third })).status,
    ).toBe(204);
    for (const session of [second, third]) {
      expect((await call(stack.url, 'GET', '/tokens', { bearer: session })).status).toBe(401);
    }
  });

  it('a session ends after 30 idle minutes, and after 12 hours however active (injectable clock)', async () => {
    const idle = (await signIn(ownerEmail)).body.session_token;
    const active = (await signIn(ownerEmail)).body.session_token;
    let moved = 0;
    try {
      for (let step = 0; step < 3; step++) {
        clock.advance(20 * 60_000);
        moved += 20 * 60_000;
        expect((await call(stack.url, 'GET', '/tokens', { bearer: active })).status).toBe(200);
      }
      expect((await call(stack.url, 'GET', '/tokens', { bearer: idle })).status).toBe(401);
      clock.advance(12 * 3600_000);
      moved += 12 * 3600_000;
      expect((await call(stack.url, 'GET', '/tokens', { bearer: active })).status).toBe(401);
    } finally {
      clock.advance(-moved);
    }
  });

  describe('removal ends access at once, in every gateway process', () => {
    let second: GatewayProcess;
    beforeAll(async () => {
      second = await startGatewayProcess(stack.config);
    }, 90_000);
    afterAll(async () => second?.stop());

    it("removing a member ends that user's access to the tenant at the next request, here and in another process", async () => {
      const member = await newMember(tenant);
      const session = (await signIn(member.email)).body.session_token;
      for (const base of [stack.url, second.url]) {
        expect((await call(base, 'GET', '/tokens', { bearer: session })).status).toBe(200);
      }
      const removed = await call(stack.url, 'DELETE', `/tenants/self/members/${member.memberId}`, {
        key: tenant.apiKey,
      });
      expect(removed.status).toBe(204);
      for (const base of [stack.url, second.url]) {
        const answer = await call(base, 'GET', '/tokens', { bearer: session });
        expect(answer.status).toBe(403);
        expect(answer.headers.get('content-type')).toContain('application/problem+json');
      }
    });

    it("deleting the tenant ends its members' access, here and in another process", async () => {
      const doomed = await stack.createTenant('Doomed');
      const member = await newMember(doomed);
      const session = (await signIn(member.email)).body.session_token;
      for (const base of [second.url, stack.url]) {
        expect((await call(base, 'GET', '/tenants/self', { bearer: session })).status).toBe(200);
      }
      expect((await call(stack.url, 'DELETE', '/tenants/self', { key: doomed.apiKey })).status).toBe(204);
      for (const base of [second.url, stack.url]) {
        const answer = await call(base, 'GET', '/tenants/self', { bearer: session });
        expect([401, 403], `${base}: ${answer.text}`).toContain(answer.status);
        expect(answer.text).not.toContain(doomed.tenantId);
      }
    });

    it('signing out in one process is refused in the other', async () => {
      const session = (await signIn(ownerEmail)).body.session_token;
      expect((await call(second.url, 'GET', '/tokens', { bearer: session })).status).toBe(200);
      expect((await call(stack.url, 'DELETE', '/sessions/self', { bearer: session })).status).toBe(204);
      expect((await call(second.url, 'GET', '/tokens', { bearer: session })).status).toBe(401);
    });
  });
});

describe('sign-in e-mail requests: the same answer for any address, and caps', () => {
  let stack: TestStack;
  let smtp: TestSmtpServer;
  let userEmail: string;
  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({
      SMTP_URL: smtp.url,
      // From this one client: its caps per address and overall (lockout and floods from many
      // clients: e2e/attacks/sign-in-lockout.e2e.spec.ts).
      SIGN_IN_EMAILS_PER_ADDRESS_CLIENT_PER_HOUR: '3',
      SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR: '8',
    });
    const tenant = await stack.createTenant();
    const members = await call<{ data: { user: { email: string } }[] }>(
      stack.url,
      'GET',
      '/tenants/self/members',
      {
        key: tenant.apiKey,
      },
    );
    userEmail = members.body.data[0]!.user.email;
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });
  const requestLink = (email: string) => call(stack.url, 'POST', '/sessions/email', { body: { email } });

  it('answers 202 for an unknown address as for a user, e-mails only the user, and caps both alike per address, then per client (429 + Retry-After)', async () => {
    const unknown = newAddress('nobody');
    for (let i = 0; i < 3; i++) {
      const [forUnknown, forUser] = await Promise.all([requestLink(unknown), requestLink(userEmail)]);
      expect(forUnknown.status).toBe(202);
      expect(forUser.status).toBe(202);
      expect(forUnknown.text).toBe(forUser.text);
    }
    const [cappedUnknown, cappedUser] = await Promise.all([requestLink(unknown), requestLink(userEmail)]);
    for (const capped of [cappedUnknown, cappedUser]) {
      expect(capped.status).toBe(429);
      expect(Number(capped.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(cappedUnknown.body.detail).toBe(cappedUser.body.detail);
    await smtp.waitFor(userEmail, (m) => m.subject.includes('sign-in'));
    expect(smtp.messages.filter((mail) => mail.to.includes(unknown))).toEqual([]);
    // Eight requests so far from this client: the ninth, for a fresh address, meets the client cap.
    const byClient = await requestLink(newAddress('fresh'));
    expect(byClient.status).toBe(429);
    expect(Number(byClient.headers.get('retry-after'))).toBeGreaterThan(0);
    const invalid = await call<{ errors: Record<string, string[]> }>(stack.url, 'POST', '/sessions/email', {
      body: { email: 'nope' },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors).toHaveProperty(['body.email']);
  });
});
