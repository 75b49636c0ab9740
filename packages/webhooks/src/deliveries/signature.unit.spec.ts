import { describe, expect, it } from 'vitest';
import { newSigningSecret, signatureHeaders } from './signature.ts';

describe('delivery signatures', () => {
  it('match the Standard Webhooks test vector', () => {
    const headers = signatureHeaders(
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('carry one signature per secret in the overlap window, and new secrets differ', () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(a).not.toBe(b);
    const signature = signatureHeaders([a, b], 'id', 1, '{}')['webhook-signature'];
    expect(signature.split(' ')).toEqual([
      signatureHeaders([a], 'id', 1, '{}')['webhook-signature'],
      signatureHeaders([b], 'id', 1, '{}')['webhook-signature'],
    ]);
  });
});
