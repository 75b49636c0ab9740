import { createHash, createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '@tokenvault/vault';

/** The fixed HKDF label: the link key is used for nothing else. */
const linkKeyLabel = 'tokenvault/invitation-link/v1';
const uuidPattern = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const tokenPattern = new RegExp(
  `^(${uuidPattern})\\.(${uuidPattern})\\.([1-9][0-9]{0,8})\\.([A-Za-z0-9_-]{43})$`,
);

export interface LinkIdentity {
  tenantId: string;
  invitationId: string;
  linkVersion: number;
}

/**
 * Invitation link tokens are derived, never stored: `<tenant>.<invitation>.<version>.<mac>`, the
 * mac an HMAC-SHA256 (base64url) over `tenant:invitation:version` under a key derived by HKDF from
 * the master key. Events keep only the token's SHA-256; the worker derives the token again from
 * the ids and the version, so no queue payload or table ever holds it. A resend raises the
 * version: every earlier link then names a stale version.
 */
export class InvitationLinks {
  private readonly key: KeyObject;

  constructor(masterKeyBase64: string) {
    this.key = derivedKey(masterKeyBase64, linkKeyLabel);
  }

  token({ tenantId, invitationId, linkVersion }: LinkIdentity): string {
    return `${tenantId}.${invitationId}.${linkVersion}.${this.mac(tenantId, invitationId, linkVersion)}`;
  }

  tokenHash(identity: LinkIdentity): string {
    return hashLinkToken(this.token(identity));
  }

  /** The ids a token names, when it is well-formed and its mac is ours; undefined otherwise. */
  parse(token: string): LinkIdentity | undefined {
    const match = tokenPattern.exec(token);
    if (!match) return undefined;
    const [, tenantId, invitationId, version, mac] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
    ];
    const linkVersion = Number(version);
    const expected = Buffer.from(this.mac(tenantId, invitationId, linkVersion), 'utf8');
    const given = Buffer.from(mac, 'utf8');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    return { tenantId, invitationId, linkVersion };
  }

  private mac(tenantId: string, invitationId: string, linkVersion: number): string {
    return createHmac('sha256', this.key)
      .update(`${tenantId}:${invitationId}:${linkVersion}`, 'utf8')
      .digest('base64url');
  }
}

export function hashLinkToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}
