import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DecryptionError, canonicalJson, hmac, open, seal, secretKeyOf } from './crypto.ts';

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
