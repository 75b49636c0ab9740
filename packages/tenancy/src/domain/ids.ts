import { createHash } from 'node:crypto';

/**
 * A UUID (version 8, RFC 9562) derived from a namespace and a name by SHA-256: the same inputs
 * always give the same id, so two concurrent writers of "the same" entity meet on one stream.
 */
export function derivedUuid(namespace: string, name: string): string {
  const bytes = createHash('sha256')
    .update(`tokenvault:${namespace}:${name}`, 'utf8')
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The one user of an e-mail address (compared without case). */
export const userIdOfEmail = (email: string) => derivedUuid('user', email.toLowerCase());
/** The member an invitation creates: one per invitation, whoever accepts it and however often. */
export const memberIdOfInvitation = (tenantId: string, invitationId: string) =>
  derivedUuid('member', `${tenantId}:${invitationId}`);
