import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from './webhook-signature.ts';

// The Standard Webhooks test vector.
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const body = '{"test": 2432232314}';
const headers = {
  'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  'webhook-timestamp': '1614265330',
  'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const nowSeconds = 1614265330 + 10;
const refused = (promise: Promise<unknown>, message: RegExp) =>
  expect(promise).rejects.toThrow(
    expect.objectContaining({ name: WebhookVerificationError.name, message: expect.stringMatching(message) }),
  );

describe('verifyWebhook', () => {
  it('accepts a delivery signed with the secret, and answers its id', async () => {
    await expect(verifyWebhook({ secrets: secret, headers, body, nowSeconds })).resolves.toBe(
      headers['webhook-id'],
    );
    await expect(
      verifyWebhook({ secrets: secret, headers: new Headers(headers), body, nowSeconds }),
    ).resolves.toBe(headers['webhook-id']);
  });

  it('accepts any of the signatures with any of the secrets (a rotation’s overlap window)', async () => {
    const other = 'whsec_' + btoa('another secret of 32 bytes......');
    const both = { ...headers, 'webhook-signature': `v1,bm90IGl0 ${headers['webhook-signature']}` };
    await expect(verifyWebhook({ secrets: [other, secret], headers: both, body, nowSeconds })).resolves.toBe(
      headers['webhook-id'],
    );
  });

  it('refuses an altered body, id or timestamp', async () => {
    await refused(
      verifyWebhook({ secrets: secret, headers, body: '{"test": 2432232315}', nowSeconds }),
      /no signature/,
    );
    await refused(
      verifyWebhook({
        secrets: secret,
        headers: { ...headers, 'webhook-id': 'msg_other' },
        body,
        nowSeconds,
      }),
      /no signature/,
    );
    await refused(
      verifyWebhook({
        secrets: secret,
        headers: { ...headers, 'webhook-timestamp': String(1614265330 + 1) },
        body,
        nowSeconds,
      }),
      /no signature/,
    );
  });

  it('refuses a wrong secret and a signature of another scheme', async () => {
    await refused(
      verifyWebhook({ secrets: 'whsec_' + btoa('x'.repeat(32)), headers, body, nowSeconds }),
      /no signature/,
    );
    await refused(
      verifyWebhook({
        secrets: secret,
        headers: { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') },
        body,
        nowSeconds,
      }),
      /no signature/,
    );
  });

  it('refuses a stale or replayed delivery: a timestamp beyond the tolerance, either way', async () => {
    await refused(
      verifyWebhook({ secrets: secret, headers, body, nowSeconds: 1614265330 + 301 }),
      /timestamp/,
    );
    await refused(
      verifyWebhook({ secrets: secret, headers, body, nowSeconds: 1614265330 - 301 }),
      /timestamp/,
    );
    await expect(
      verifyWebhook({
        secrets: secret,
        headers,
        body,
        nowSeconds: 1614265330 + 3600,
        toleranceSeconds: 7200,
      }),
    ).resolves.toBe(headers['webhook-id']);
  });

  it('refuses a delivery without the headers', async () => {
    await refused(verifyWebhook({ secrets: secret, headers: {}, body, nowSeconds }), /missing/);
  });
});
