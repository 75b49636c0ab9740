/**
 * Checks a webhook delivery before its body is trusted, with Web Crypto only: the Standard
 * Webhooks headers (docs/webhooks.md) `webhook-id`, `webhook-timestamp` and `webhook-signature`
 * (`v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>`, one per signing key in a rotation's
 * overlap window, space-separated). `body` must be the raw body as received: a body parsed and
 * serialized again does not verify.
 */

export interface WebhookVerification {
  /** The signing secret (`whsec_…`, GET /webhooks/signing-key); several during a rotation. */
  secrets: string | readonly string[];
  headers: Record<string, string | string[] | undefined> | Headers;
  body: string;
  /** How far the timestamp may be from now (replays of old deliveries fail). Default 300 s. */
  toleranceSeconds?: number;
  /** Now, in seconds since the epoch (default: the clock's). */
  nowSeconds?: number;
}

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

const header = (headers: WebhookVerification['headers'], name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
};

const base64Bytes = (base64: string): Uint8Array<ArrayBuffer> =>
  Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));

const bytesBase64 = (bytes: ArrayBuffer): string => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** Equal strings, compared in time that does not depend on where they differ. */
function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * Resolves to the delivery's id (`webhook-id`: drop a delivery whose id was seen, since a
 * delivery may come more than once) when a signature matches one of the secrets and the
 * timestamp is within the tolerance; rejects with a WebhookVerificationError otherwise.
 */
export async function verifyWebhook(verification: WebhookVerification): Promise<string> {
  const id = header(verification.headers, 'webhook-id');
  const timestamp = header(verification.headers, 'webhook-timestamp');
  const signatures = header(verification.headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook headers');
  const seconds = Number(timestamp);
  const now = verification.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (!Number.isInteger(seconds) || Math.abs(now - seconds) > (verification.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError('the timestamp is too old or too new');
  }
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${verification.body}`);
  const given = signatures
    .split(' ')
    .filter((signature) => signature.startsWith('v1,'))
    .map((signature) => signature.slice(3));
  const secrets = typeof verification.secrets === 'string' ? [verification.secrets] : verification.secrets;
  for (const secret of secrets) {
    const key = await crypto.subtle.importKey(
      'raw',
      base64Bytes(secret.replace(/^whsec_/, '')),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const expected = bytesBase64(await crypto.subtle.sign('HMAC', key, signed));
    if (given.some((signature) => same(signature, expected))) return id;
  }
  throw new WebhookVerificationError('no signature matches');
}
