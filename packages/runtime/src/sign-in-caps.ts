import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { tooManyRequests, type Config } from '@tokenvault/platform';
import type { RateLimiter } from './guards/rate-limit.ts';

/**
 * Who a client is for the caps: its IPv4 address (an IPv4-mapped IPv6 one unwrapped), or the /64
 * of an IPv6 address (one subscriber's prefix: rotating addresses inside it is free).
 */
export function clientOf(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIP(address) !== 6) return address;
  const [head = '', tail] = address.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const before = groups(head);
  const after = groups(tail ?? '');
  // A trailing dotted IPv4 address takes two groups.
  const width = (list: string[]) => list.length + (list.at(-1)?.includes('.') ? 1 : 0);
  const zeros = tail === undefined ? [] : Array<string>(8 - width(before) - width(after)).fill('0');
  const prefix = [...before, ...zeros, ...after].slice(0, 4);
  return `${prefix.map((group) => Number.parseInt(group, 16).toString(16)).join(':')}::/64`;
}

/**
 * The caps of POST /sessions/email (GCRA in Redis, shared by every gateway process): per client,
 * per address from one client, and per address from all clients together. Counted before the
 * address is looked up, so a capped unknown address answers 429 exactly like a capped user's.
 * Addresses and clients are keys only as SHA-256 digests. The client's own caps are taken first,
 * and a request they refuse is not counted against the address overall: one client's flood
 * uses up its own allowance, never the owner's (docs/decisions.md, Members' sessions).
 */
export function signInAllowance(
  limiter: RateLimiter,
  config: Pick<
    Config,
    | 'SIGN_IN_EMAILS_PER_ADDRESS_CLIENT_PER_HOUR'
    | 'SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR'
    | 'SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR'
  >,
) {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');
  const refused = (retryAfter: number) =>
    tooManyRequests(
      'Too many sign-in e-mails for this address or from this client; retry later.',
      retryAfter,
    );
  return async (email: string, clientAddress: string | undefined): Promise<void> => {
    const address = digest(email.toLowerCase());
    const client = digest(clientOf(clientAddress));
    const ofClient = await Promise.all([
      limiter.takeFrom(
        `sign-in-email:client:${client}`,
        'sign-in-client',
        config.SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR,
        3600,
      ),
      limiter.takeFrom(
        `sign-in-email:address-client:${digest(`${address}:${client}`)}`,
        'sign-in-address-client',
        config.SIGN_IN_EMAILS_PER_ADDRESS_CLIENT_PER_HOUR,
        3600,
      ),
    ]);
    const clientRetryAfter = Math.max(...ofClient.map((outcome) => outcome.retryAfter ?? 0));
    if (clientRetryAfter > 0) throw refused(clientRetryAfter);
    const overall = await limiter.takeFrom(
      `sign-in-email:address:${address}`,
      'sign-in-address',
      config.SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR,
      3600,
    );
    if (overall.retryAfter) throw refused(overall.retryAfter);
  };
}
