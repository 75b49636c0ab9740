import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret, as Standard Webhooks writes one: `whsec_` and 32 random bytes in base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The Standard Webhooks headers of one delivery: `webhook-signature` holds one `v1,<base64
 * HMAC-SHA256(secret, id.timestamp.body)>` per secret (space-separated), so that during a
 * rotation's overlap window a receiver holding either the old or the new secret can verify it.
 */
export function signatureHeaders(
  secrets: readonly string[],
  deliveryId: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const signed = `${deliveryId}.${timestampSeconds}.${body}`;
  const signatures = secrets.map(
    (secret) =>
      `v1,${createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
        .update(signed)
        .digest('base64')}`,
  );
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatures.join(' '),
  };
}
