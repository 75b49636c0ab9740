import { createHash } from 'node:crypto';
import type { Config } from '@tokenvault/platform';
import { tooManyRequests, type RateLimiter } from './guards/rate-limit.ts';

/**
 * The caps of POST /sessions/email, per address and per client address (GCRA in Redis, shared by
 * every gateway process). Counted before the address is looked up, so a capped unknown address
 * answers 429 exactly like a capped user's. Addresses are keys only as a SHA-256.
 */
export function signInAllowance(
  limiter: RateLimiter,
  config: Pick<Config, 'SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR' | 'SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR'>,
) {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');
  return async (email: string, clientAddress: string | undefined): Promise<void> => {
    const [byAddress, byClient] = await Promise.all([
      limiter.takeFrom(
        `sign-in-email:address:${digest(email.toLowerCase())}`,
        'sign-in-address',
        config.SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR,
        3600,
      ),
      limiter.takeFrom(
        `sign-in-email:client:${digest(clientAddress ?? 'unknown')}`,
        'sign-in-client',
        config.SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR,
        3600,
      ),
    ]);
    const retryAfter = Math.max(byAddress.retryAfter ?? 0, byClient.retryAfter ?? 0);
    if (retryAfter > 0) {
      throw tooManyRequests(
        'Too many sign-in e-mails for this address or from this client; retry later.',
        retryAfter,
      );
    }
  };
}
