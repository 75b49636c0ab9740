import { Problem, type Principal, type Redis } from '@tokenvault/platform';

/**
 * GCRA (the generic cell rate algorithm) in one script: the key holds the theoretical arrival
 * time (TAT, microseconds of Redis's clock, shared by every gateway process). A request is
 * allowed when the TAT after it is at most one window ahead of now, so a whole window's quota
 * may come at once and then refills evenly (no burst at window boundaries).
 * Returns {allowed, microseconds until the quota is full again, microseconds until a retry may pass}.
 */
const gcraScript = `
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local later = tat + interval
if later - now > window then
  return {0, tat - now, later - now - window}
end
redis.call('SET', KEYS[1], string.format("%d", later), "PX", math.ceil((later - now) / 1000) + 1)
return {1, later - now, 0}`;

export interface RateLimitOutcome {
  headers: Record<string, string>;
  /** Seconds until a retry may pass, when refused. */
  retryAfter?: number;
}

/**
 * Per API key (application): its own `rate_limit.requests_per_minute` or RATE_LIMIT_PER_MINUTE,
 * answered in the IETF httpapi RateLimit-Policy / RateLimit headers.
 */
export class RateLimiter {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly defaultPerMinute: number;

  constructor(redis: Redis, options: { prefix: string; defaultPerMinute: number }) {
    this.redis = redis;
    this.prefix = options.prefix;
    this.defaultPerMinute = options.defaultPerMinute;
  }

  /** Counts the request; undefined when no limit applies. */
  async take(principal: Principal): Promise<RateLimitOutcome | undefined> {
    const own = principal.rateLimitPerMinute;
    const quota = own ?? this.defaultPerMinute;
    if (quota <= 0) return undefined;
    const name = own === undefined ? 'default' : 'application';
    return this.takeFrom(`rate-limit:${principal.tenantId}:${principal.actorId}`, name, quota, 60);
  }

  /** Counts one request against any named allowance (quota per window, GCRA like the keys'). */
  async takeFrom(
    keySuffix: string,
    name: string,
    quota: number,
    windowSeconds: number,
  ): Promise<RateLimitOutcome> {
    const windowUs = windowSeconds * 1_000_000;
    const intervalUs = Math.max(1, Math.floor(windowUs / quota));
    const key = `${this.prefix}:${keySuffix}`;
    const [allowed, fullInUs, retryInUs] = (await this.redis.eval(
      gcraScript,
      1,
      key,
      String(intervalUs),
      String(windowUs),
    )) as [number, number, number];
    const remaining = allowed ? Math.max(0, Math.floor((windowUs - fullInUs) / intervalUs)) : 0;
    const headers = {
      'ratelimit-policy': `"${name}";q=${quota};w=${windowSeconds}`,
      ratelimit: `"${name}";r=${remaining};t=${Math.ceil(fullInUs / 1_000_000)}`,
    };
    if (allowed) return { headers };
    return { headers, retryAfter: Math.max(1, Math.ceil(retryInUs / 1_000_000)) };
  }
}

export const tooManyRequests = (detail: string, retryAfter: number) =>
  new Problem(429, 'too-many-requests', 'Too Many Requests', detail, undefined, {
    'retry-after': String(retryAfter),
  });

/** The key's rate limit on one call: its headers on the answer, and a 429 past it. */
export async function takeRateLimit(
  limiter: RateLimiter,
  principal: Principal,
  res: { setHeader(name: string, value: string): unknown },
): Promise<void> {
  const limited = await limiter.take(principal);
  if (!limited) return;
  for (const [name, value] of Object.entries(limited.headers)) res.setHeader(name, value);
  if (limited.retryAfter !== undefined) {
    throw tooManyRequests('This API key has used its request quota; retry later.', limited.retryAfter);
  }
}
