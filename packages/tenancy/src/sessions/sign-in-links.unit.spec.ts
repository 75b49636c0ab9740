import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  looksLikeBrowserNonce,
  looksLikeSessionToken,
  newBrowserNonce,
  newSessionToken,
  SignInLinks,
} from './sign-in-links.ts';

describe('sign-in link tokens', () => {
  const links = new SignInLinks(randomBytes(32).toString('base64'));

  it('names its link id, and only under the key that made it', () => {
    const id = randomUUID();
    const token = links.token(id);
    expect(links.parse(token)).toBe(id);
    expect(new SignInLinks(randomBytes(32).toString('base64')).parse(token)).toBeUndefined();
  });

  it('refuses a tampered or malformed token', () => {
    const token = links.token(randomUUID());
    const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect(links.parse(tampered)).toBeUndefined();
    expect(links.parse('not-a-token')).toBeUndefined();
    expect(links.parse(`${randomUUID()}.short`)).toBeUndefined();
  });

  it('session tokens have their own recognisable shape', () => {
    const token = newSessionToken();
    expect(looksLikeSessionToken(token)).toBe(true);
    expect(looksLikeSessionToken(`key_${token.slice(4)}`)).toBe(false);
    expect(newSessionToken()).not.toBe(token);
  });

  it('browser nonces are 256 random bits; anything else in the cookie is not one', () => {
    const nonce = newBrowserNonce();
    expect(looksLikeBrowserNonce(nonce)).toBe(true);
    expect(newBrowserNonce()).not.toBe(nonce);
    for (const other of ['', 'x', `${nonce}=`, `${nonce.slice(1)};`, newSessionToken()]) {
      expect(looksLikeBrowserNonce(other), other).toBe(false);
    }
  });
});
