// Finding 7, lockout: five anonymous POST /sessions/email for a member's address locked that
// member out for an hour, whoever sent them, and every request replaced the member's pending
// link; the per-client cap was keyed on the socket address, so behind the compose stack's HAProxy
// every client shared one bucket. The attacker here floods the victim's address from one client
// address (a local address of its own, or one a trusted proxy forwards), and the victim, from
// another, still gets a link and signs in with the one it has.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerEmailOf, signInClient, type SignInAnswer, type SignInClient } from '../support/sign-in.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from '../support/smtp.ts';
import { startStack, type TestStack } from '../support/stack.ts';

const clientAt = (baseUrl: string, localAddress: string) => signInClient(baseUrl, { localAddress });

/** The statuses of `count` requests made one after the other. */
async function statuses(count: number, send: (index: number) => Promise<SignInAnswer>): Promise<number[]> {
  const seen: number[] = [];
  for (let index = 0; index < count; index++) seen.push((await send(index)).status);
  return seen;
}

const accepted = (count: number) => Array.from({ length: count }, () => 202);
const refused = (count: number) => Array.from({ length: count }, () => 429);

/**
 * Signs the client in with the link of its own request: among the e-mails to this address since
 * `before` (the attacker's arrive too, in any order), the one whose link signs it in. Another
 * browser's link is a 403 that leaves it unused, or a 410 when that browser replaced it since, so
 * trying one is harmless; no e-mail with a link that works fails with the mailbox's timeout.
 */
async function signInWithOwnLink(
  client: SignInClient,
  smtp: TestSmtpServer,
  email: string,
  before: Set<unknown>,
): Promise<SignInAnswer> {
  const tried = new Set<unknown>();
  for (;;) {
    const mail = await smtp.waitFor(
      email,
      (candidate) => !before.has(candidate) && !tried.has(candidate),
      10_000,
    );
    tried.add(mail);
    const answer = await client.signIn(linkTokenOf(mail));
    if (answer.status !== 403 && answer.status !== 410) return answer;
  }
}

describe('attack: flooding sign-in e-mails for a member’s address, service reached directly', () => {
  let stack: TestStack;
  let smtp: TestSmtpServer;
  let victimEmail: string;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    // The default caps: 5 per address and client, 30 per client, 20 per address overall.
    stack = await startStack({ SMTP_URL: smtp.url, LOG_LEVEL: 'warn' });
    victimEmail = await ownerEmailOf(await stack.createTenant());
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  it('a flood from one client address neither locks the victim out on another nor takes its pending link away', async () => {
    const victim = clientAt(stack.url, '127.0.0.3');
    const attacker = clientAt(stack.url, '127.0.0.2');
    const before = new Set(smtp.messages);
    expect((await victim.askLink(victimEmail)).status).toBe(202);
    expect(await statuses(12, () => attacker.askLink(victimEmail))).toEqual([...accepted(5), ...refused(7)]);
    // The victim's link still works where it was asked for: the flood did not replace it.
    const session = await signInWithOwnLink(victim, smtp, victimEmail, before);
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    expect(session.body.user).toMatchObject({ email: victimEmail });
    // And the victim can ask for another, and use it.
    const again = new Set(smtp.messages);
    expect((await victim.askLink(victimEmail)).status).toBe(202);
    expect((await signInWithOwnLink(victim, smtp, victimEmail, again)).status).toBe(201);
  });

  it('without TRUST_PROXY a forged X-Forwarded-For is ignored: the caps hold per socket address', async () => {
    const forger = clientAt(stack.url, '127.0.0.4');
    const target = `target-${Date.now()}@example.com`;
    expect(await statuses(6, (index) => forger.askLink(target, `203.0.113.${index + 1}`))).toEqual([
      ...accepted(5),
      429,
    ]);
    // The per-client cap (30) counts every address this socket address asked for.
    const more = await statuses(25, (index) =>
      forger.askLink(`other-${index}-${Date.now()}@example.com`, `198.51.100.${index + 1}`),
    );
    expect(more).toEqual([...accepted(24), 429]);
  });
});

describe('attack: flooding sign-in e-mails behind a trusted proxy (TRUST_PROXY)', () => {
  let stack: TestStack;
  let smtp: TestSmtpServer;
  let victimEmail: string;
  /** This test's connections come from 127.0.0.1, the proxy the service trusts (one hop). */
  let proxy: SignInClient;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    stack = await startStack({ SMTP_URL: smtp.url, LOG_LEVEL: 'warn', TRUST_PROXY: '1' });
    victimEmail = await ownerEmailOf(await stack.createTenant());
    proxy = clientAt(stack.url, '127.0.0.1');
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  it('the client address is the one the proxy forwards: a flood from one client leaves the victim’s own requests alone', async () => {
    expect(await statuses(7, () => proxy.askLink(victimEmail, '203.0.113.7'))).toEqual([
      ...accepted(5),
      ...refused(2),
    ]);
    const victim = clientAt(stack.url, '127.0.0.1');
    const before = new Set(smtp.messages);
    expect((await victim.askLink(victimEmail, '198.51.100.9')).status).toBe(202);
    expect((await signInWithOwnLink(victim, smtp, victimEmail, before)).status).toBe(201);
  });

  it('only the trusted hop’s entry counts: what the client put before it in X-Forwarded-For is ignored', async () => {
    const target = `spoof-${Date.now()}@example.com`;
    // The proxy appends the address it saw to what the client sent.
    const sent = await statuses(6, (index) => proxy.askLink(target, `10.9.8.${index}, 203.0.113.20`));
    expect(sent).toEqual([...accepted(5), 429]);
  });

  it('an IPv6 client is counted by its /64: rotating addresses inside one prefix does not escape the caps', async () => {
    const target = `v6-${Date.now()}@example.com`;
    const sent = await statuses(6, (index) =>
      proxy.askLink(target, `2001:db8:5:6::${(index + 1).toString(16)}`),
    );
    expect(sent).toEqual([...accepted(5), 429]);
  });

  it('many clients together are capped per address overall (20 an hour): the victim’s mailbox is not flooded', async () => {
    const target = `mailbox-${Date.now()}@example.com`;
    for (let client = 0; client < 4; client++) {
      expect(await statuses(5, () => proxy.askLink(target, `192.0.2.${client + 1}`))).toEqual(accepted(5));
    }
    expect((await proxy.askLink(target, '192.0.2.99')).status).toBe(429);
  });
});
