import { createHash, createHmac, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '@tokenvault/vault';

/** The fixed HKDF label: the sign-in link key is used for nothing else. */
const linkKeyLabel = 'tokenvault/sign-in-link/v1';
const tokenPattern = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{43})$/;

/**
 * Sign-in link tokens are derived, never stored, like invitation links: `<link id>.<mac>`, the mac
 * an HMAC-SHA256 (base64url) of the id under a key derived by HKDF from the master key. The table
 * keeps only the token's SHA-256; the worker derives the token again from the id its job names,
 * so no queue payload ever holds it.
 */
export class SignInLinks {
  private readonly key: KeyObject;

  constructor(masterKeyBase64: string) {
    this.key = derivedKey(masterKeyBase64, linkKeyLabel);
  }

  token(linkId: string): string {
    return `${linkId}.${this.mac(linkId)}`;
  }

  /** The link id a token names, when it is well-formed and its mac is ours. */
  parse(token: string): string | undefined {
    const match = tokenPattern.exec(token);
    if (!match) return undefined;
    const [, linkId, mac] = match as unknown as [string, string, string];
    const expected = Buffer.from(this.mac(linkId), 'utf8');
    const given = Buffer.from(mac, 'utf8');
    return expected.length === given.length && timingSafeEqual(expected, given) ? linkId : undefined;
  }

  private mac(linkId: string): string {
    return createHmac('sha256', this.key).update(linkId, 'utf8').digest('base64url');
  }
}

export const sha256Hex = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

/** Session tokens: 256 random bits, prefixed so that they are told apart from API keys at a glance. */
export const sessionTokenPrefix = 'tvs_';
export const newSessionToken = () => `${sessionTokenPrefix}${randomBytes(32).toString('base64url')}`;
export const looksLikeSessionToken = (value: string) => /^tvs_[A-Za-z0-9_-]{43}$/.test(value);

/**
 * The nonce that binds sign-in links to the browser that asked for them (the `tv_sign_in` cookie
 * of POST /sessions/email): 256 random bits; links keep only its SHA-256.
 */
export const newBrowserNonce = () => randomBytes(32).toString('base64url');
export const looksLikeBrowserNonce = (value: string) => /^[A-Za-z0-9_-]{43}$/.test(value);
