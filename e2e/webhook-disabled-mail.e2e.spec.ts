// A webhook disabled by its deliveries tells its notify_email, through the mail worker and a real
// SMTP server: the e-mail names the webhook and why, says how to turn it on again, and carries
// neither the signing secret nor a delivery's body nor the receiver's path; the address is in
// no Redis value and no log line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';
import { everyRedisValue } from './support/redis.ts';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.ts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';

describe('the e-mail to a disabled webhook’s notify_email', () => {
  let smtp: TestSmtpServer;
  let stack: TestStack;
  let tenant: TestTenant;
  let receiver: TestDestination;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    receiver = await startHttpDestination();
    // A 500 is retried once, and one delivery that failed both attempts disables its webhook.
    receiver.answer((request, res) => {
      res.writeHead(request.url?.startsWith('/gone') ? 410 : 500);
      res.end();
    });
    stack = await startStack({
      SMTP_URL: smtp.url,
      WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
      WEBHOOK_BACKOFF_MS: '100',
      WEBHOOK_ATTEMPTS: '2',
      WEBHOOK_DISABLE_AFTER_FAILURES: '1',
    });
    tenant = await stack.createTenant();
  });
  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
    await smtp?.stop();
  });

  const subscribe = async (path: string, notifyEmail?: string) => {
    const created = await tenant.client.request<{ id: string }>('POST', '/webhooks', {
      body: {
        name: `Orders ${path}`,
        url: `${receiver.url}${path}?auth=secret-in-query`,
        events: ['token:created'],
        ...(notifyEmail ? { notify_email: notifyEmail } : {}),
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id;
  };

  const disabled = (webhookId: string) =>
    eventually(async () => {
      const webhook = await tenant.client.request<{ status: string }>('GET', `/webhooks/${webhookId}`);
      expect(webhook.body.status).toBe('disabled');
    }, 30_000);

  it('a 410 disables the webhook and its notify_email is told which, why and how to re-enable', async () => {
    const webhookId = await subscribe('/gone/hook', 'ops-gone@example.com');
    const token = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'token', data: 'gone' },
    });
    await disabled(webhookId);
    const mail = await smtp.waitFor('ops-gone@example.com');
    expect(mail.subject).toBe('Webhook “Orders /gone/hook” was disabled on Tokenvault');
    expect(mail.text).toContain(
      `(id ${webhookId}, receiver host “127[.]0[.]0[.]1:${new URL(receiver.url).port}”)`,
    );
    expect(mail.text).toContain('Its receiver answered 410 Gone');
    expect(mail.text).toContain(`PUT /webhooks/${webhookId} with "status": "enabled"`);
    expect(mail.messageId).toMatch(/^<webhook-disabled\.[^@]+@tokenvault>$/);
    const secret = await tenant.client.request<{ key: string }>('GET', '/webhooks/signing-key');
    for (const part of [mail.text, mail.html, mail.subject]) {
      expect(part).not.toContain(secret.body.key);
      expect(part).not.toContain(token.body.id);
      expect(part).not.toContain('secret-in-query');
      expect(part).not.toContain('/gone/hook?');
    }
  });

  it('deliveries failing in a row disable it, the e-mail says so; the address stays out of Redis and logs', async () => {
    const webhookId = await subscribe('/failing', 'ops-failing@example.com');
    await tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'failing' } });
    await disabled(webhookId);
    const mail = await smtp.waitFor('ops-failing@example.com');
    expect(mail.text).toContain(`(id ${webhookId},`);
    expect(mail.text).toContain('Its last delivery failed every attempt.');
    const redisValues = await everyRedisValue(stack.config.REDIS_URL, `${stack.config.QUEUE_PREFIX}:*`);
    expect(redisValues.some((value) => value.includes(webhookId))).toBe(true);
    expect(redisValues.filter((value) => value.includes('ops-failing@example.com'))).toEqual([]);
    expect(stack.logs.filter((line) => line.includes('ops-failing@example.com'))).toEqual([]);
  });

  it('a webhook without notify_email is told nothing', async () => {
    const silent = await subscribe('/gone/silent');
    await tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'silent' } });
    await disabled(silent);
    const before = smtp.messages.length;
    // Another webhook's e-mail is sent after the silent one's job, so waiting for it is enough.
    const after = await subscribe('/gone/after', 'ops-after@example.com');
    await tenant.client.request('POST', '/tokens', { body: { type: 'token', data: 'after' } });
    await disabled(after);
    await smtp.waitFor('ops-after@example.com');
    expect(smtp.messages.slice(before).map((mail) => mail.to)).toEqual([['ops-after@example.com']]);
  });
});
