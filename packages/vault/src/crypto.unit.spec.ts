import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DecryptionError,
  canonicalJson,
  derivedKey,
  hmac,
  open,
  seal,
  searchKeyOf,
  secretKeyOf,
} from './crypto.ts';

const newKey = () => secretKeyOf(randomBytes(32));

describe('seal and open', () => {
  const key = newKey();

  it('round-trips and never shows the plaintext', () => {
    const sealed = seal(key, Buffer.from('4242424242424242'), 'tenant:token');
    expect(sealed).not.toContain('4242');
    expect(open(key, sealed, 'tenant:token').toString()).toBe('4242424242424242');
  });

  it('gives a different ciphertext each time', () => {
    expect(seal(key, Buffer.from('x'), 'a')).not.toBe(seal(key, Buffer.from('x'), 'a'));
  });

  it('refuses other associated data, another key and tampering', () => {
    const sealed = seal(key, Buffer.from('secret'), 'tenant-a:token-1');
    expect(() => open(key, sealed, 'tenant-b:token-1')).toThrow(DecryptionError);
    expect(() => open(newKey(), sealed, 'tenant-a:token-1')).toThrow(DecryptionError);
    const body = Buffer.from(sealed.slice(3), 'base64');
    body[body.length - 1]! ^= 1;
    expect(() => open(key, `v1.${body.toString('base64')}`, 'tenant-a:token-1')).toThrow(DecryptionError);
    expect(() => open(key, 'v0.AAAA', 'tenant-a:token-1')).toThrow(DecryptionError);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe('hmac', () => {
  it('depends on the key', () => {
    expect(hmac(newKey(), 'x')).not.toBe(hmac(newKey(), 'x'));
  });
});

describe('derivedKey', () => {
  const master = Buffer.alloc(32, 7).toString('base64');
  const hex = (key: ReturnType<typeof derivedKey>) => key.export().toString('hex');

  it('is HKDF-SHA256 of the master key: the same bytes as every link and record made before', () => {
    // Known answers: a change here would invalidate every invitation link and idempotency record.
    expect(hex(derivedKey(master, 'tokenvault/invitation-link/v1'))).toBe(
      '3fbf68c470cd69e87fd43d01ffd25c13e97e0477056bcea17d2a15034a549d4c',
    );
    expect(hex(derivedKey(master, 'response seal v1', 'tokenvault/idempotency'))).toBe(
      'f0af816a2a3f706ccb97de3108bfb56e84341f8e23dffe215496428f1461a75d',
    );
  });

  it('gives unrelated keys for different purposes', () => {
    expect(hex(derivedKey(master, 'a'))).not.toBe(hex(derivedKey(master, 'b')));
  });
});

describe('blind indexes (search keys)', () => {
  const fingerprintKeyBytes = randomBytes(32);
  const tenant = 'b4b2c6a0-0000-4000-8000-000000000001';

  it('equal values give equal indexes under a tenant’s search key, and none shows the value', () => {
    const key = searchKeyOf(fingerprintKeyBytes, tenant);
    const index = hmac(key, '6789');
    expect(hmac(searchKeyOf(fingerprintKeyBytes, tenant), '6789')).toBe(index);
    expect(hmac(key, '6788')).not.toBe(index);
    expect(index).not.toContain('6789');
  });

  it('is unrelated across tenants, to the fingerprint key itself and to a plain digest', () => {
    const index = hmac(searchKeyOf(fingerprintKeyBytes, tenant), '6789');
    expect(hmac(searchKeyOf(fingerprintKeyBytes, 'another-tenant'), '6789')).not.toBe(index);
    expect(hmac(searchKeyOf(randomBytes(32), tenant), '6789')).not.toBe(index);
    expect(hmac(secretKeyOf(fingerprintKeyBytes), '6789')).not.toBe(index);
    expect(createHash('sha256').update('6789').digest('base64url')).not.toBe(index);
  });
});
