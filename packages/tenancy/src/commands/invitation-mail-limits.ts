import { createHash } from 'node:crypto';
import { tooManyRequests, type Redis } from '@tokenvault/platform';

export interface InvitationMailLimitSettings {
  /** E-mails (create and resends) one invitation may cause per window. */
  perInvitation: number;
  perInvitationWindowMs: number;
  /** E-mails one address may receive from one tenant per window, over all its invitations. */
  perAddress: number;
  perAddressWindowMs: number;
}

// Checks both counters and takes one of each only when neither is spent; else answers how many
// milliseconds until the later of the spent windows ends. Atomic, so gateway processes share it.
const reserveScript = `
local wait = 0
for i = 1, 2 do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count >= tonumber(ARGV[2 * i - 1]) then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > wait then wait = ttl end
  end
end
if wait > 0 then return wait end
for i = 1, 2 do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[2 * i]) end
end
return 0`;

const tooManyEmails = (retryAfterSeconds: number) =>
  tooManyRequests(
    'Too many invitation e-mails to this address or for this invitation; try again later.',
    retryAfterSeconds,
  );

/**
 * Caps the invitation e-mails a tenant can make the service send, per invitation and per
 * recipient address, in fixed windows counted in Redis. The address is only ever a key as the
 * SHA-256 of the tenant id and the lower-cased address.
 */
export class InvitationMailLimits {
  private readonly redis: Redis;
  private readonly settings: InvitationMailLimitSettings;
  private readonly keyPrefix: string;

  constructor(
    redis: Redis,
    settings: InvitationMailLimitSettings,
    keyPrefix = 'tokenvault:invitation-mail-limit',
  ) {
    this.redis = redis;
    this.settings = settings;
    this.keyPrefix = keyPrefix;
  }

  private keys(tenantId: string, invitationId: string, email: string): [string, string] {
    const address = createHash('sha256').update(`${tenantId}\n${email.toLowerCase()}`).digest('hex');
    return [
      `${this.keyPrefix}:invitation:${tenantId}:${invitationId}`,
      `${this.keyPrefix}:address:${address}`,
    ];
  }

  /**
   * Takes one e-mail of each allowance, or throws 429 with Retry-After. The returned release gives
   * them back, for a command that then appends nothing.
   */
  async reserve(tenantId: string, invitationId: string, email: string): Promise<() => Promise<void>> {
    const keys = this.keys(tenantId, invitationId, email);
    const { perInvitation, perInvitationWindowMs, perAddress, perAddressWindowMs } = this.settings;
    const waitMs = Number(
      await this.redis.eval(
        reserveScript,
        2,
        ...keys,
        perInvitation,
        perInvitationWindowMs,
        perAddress,
        perAddressWindowMs,
      ),
    );
    if (waitMs > 0) throw tooManyEmails(Math.ceil(waitMs / 1000));
    return async () => {
      await this.redis.decr(keys[0]);
      await this.redis.decr(keys[1]);
    };
  }
}
