import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LocalKeyring, MissingMasterKeyError, parseMasterKeys } from './keyring.ts';
import { tokenKeyInvalidation, tokenOfKeyInvalidation } from './token-keys.ts';

describe('the local master keyring', () => {
  const a = randomBytes(32).toString('base64');
  const b = randomBytes(32).toString('base64');

  it('wraps with any version it holds and unwraps only with the one that wrapped', async () => {
    const ring = new LocalKeyring(parseMasterKeys(`b:${b},a:${a}`));
    expect(ring.primary).toBe('b');
    expect(ring.versions).toEqual(['b', 'a']);
    const key = randomBytes(32);
    const wrapped = await ring.wrap('a', key, 'data-key:t');
    expect(await ring.unwrap('a', wrapped, 'data-key:t')).toEqual(key);
    await expect(ring.unwrap('b', wrapped, 'data-key:t')).rejects.toThrow();
    await expect(ring.unwrap('a', wrapped, 'data-key:other')).rejects.toThrow();
  });

  it('names a version it lacks', async () => {
    const ring = new LocalKeyring([['a', a]]);
    await expect(ring.unwrap('b', 'v1.AAAA', 'x')).rejects.toBeInstanceOf(MissingMasterKeyError);
    await expect(ring.unwrap('b', 'v1.AAAA', 'x')).rejects.toThrow('"b"');
  });

  it('refuses a key that is not 32 bytes, and an empty ring', () => {
    expect(() => new LocalKeyring([['a', randomBytes(16).toString('base64')]])).toThrow('32 bytes');
    expect(() => new LocalKeyring([])).toThrow('empty');
  });
});

describe('the token key invalidation', () => {
  it('round-trips tenant and token ids, and ignores other keys', () => {
    expect(tokenOfKeyInvalidation(tokenKeyInvalidation('t-1', 'tok/en'))).toEqual({
      tenantId: 't-1',
      tokenId: 'tok/en',
    });
    expect(tokenOfKeyInvalidation('tenant-keys:t-1')).toBeUndefined();
  });
});
