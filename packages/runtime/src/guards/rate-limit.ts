import { performance } from 'node:perf_hooks';
import { tooManyRequests, type Principal, type Redis } from '@tokenvault/platform';

/**
 * GCRA (the generic cell rate algorithm) in one script, granting a lease of up to ARGV[3]
 * requests at once: the key holds the theoretical arrival time (TAT, microseconds of Redis's
 * clock, shared by every gateway process). A request fits when the TAT after it is at most one
 * window ahead of now, so a whole window's quota may come at once and then refills evenly (no
 * burst at window boundaries); a lease is as many requests as fit, at most the number asked.
 * Returns {requests granted (0: refused), microseconds until the quota is full again after the
 * grant, microseconds until one more request fits (when refused)}.
 */
const leaseScript = `
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local fits = math.floor((now + window - tat) / interval)
if fits < 1 then
  return {0, tat - now, tat + interval - now - window}
end
local granted = math.min(wanted, fits)
local later = tat + granted * interval
redis.call('SET', KEYS[1], string.format("%d", later), "PX", math.ceil((later - now) / 1000) + 1)
return {granted, later - now, 0}`;

/**
 * How long a lease's unused requests stay usable (ms). It bounds the over-admission: a request is
 * admitted at most this long after Redis counted it, so over any interval the processes together
 * admit at most quota × leaseMs / window more than one shared GCRA would (docs/decisions.md).
 */
export const leaseMs = 1_000;

export interface RateLimitOutcome {
  headers: Record<string, string>;
  /** Seconds until a retry may pass, when refused. */
  retryAfter?: number;
}

/** What this process holds of one allowance (local milliseconds of performance.now()). */
interface Allowance {
  /** Requests of the current lease not admitted yet. */
  unused: number;
  /** When the lease's unused requests lapse. */
  lapsesAt: number;
  /** The shared TAT as of the last lease, in local time (every unused request of it included). */
  fullAt: number;
  /** Requests admitted from the current lease: what the next lease asks for (twice, if used up). */
  admitted: number;
  /** Refused by Redis until then: refused here without asking again. */
  refusedUntil: number;
  /** The lease being asked for, shared by every request that waits for it. */
  pending?: Promise<void>;
}

/** Forgetting lapsed allowances at most this often keeps the map to the keys in use. */
const sweepEveryMs = 10_000;

/**
 * Per API key (application): its own `rate_limit.requests_per_minute` or RATE_LIMIT_PER_MINUTE,
 * answered in the IETF httpapi RateLimit-Policy / RateLimit headers. Each process admits
 * requests from leases taken from the shared GCRA in Redis (a slice of the quota, sized to the
 * key's recent traffic, at most what refills in `leaseMs`), so a busy key costs about one Redis
 * round trip per lease instead of one per request; a key with less than one request per
 * `leaseMs` of quota leases one request at a time, exactly as before.
 */
export class RateLimiter {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly defaultPerMinute: number;
  private readonly allowances = new Map<string, Allowance>();
  private sweptAt = performance.now();

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

  /**
   * Counts a call that carries no API key: a pre-configured proxy with `require_auth: false`
   * (a third party's webhook). The service default applies, counted per proxy, so a leaked or
   * abused key cannot call the destination (or run its transforms) without bound.
   */
  async takeForProxy(tenantId: string, proxyId: string): Promise<RateLimitOutcome | undefined> {
    if (this.defaultPerMinute <= 0) return undefined;
    return this.takeFrom(`rate-limit:${tenantId}:proxy:${proxyId}`, 'proxy', this.defaultPerMinute, 60);
  }

  /** Counts one request against any named allowance (quota per window, GCRA like the keys'). */
  async takeFrom(
    keySuffix: string,
    name: string,
    quota: number,
    windowSeconds: number,
  ): Promise<RateLimitOutcome> {
    const windowMs = windowSeconds * 1_000;
    const intervalMs = windowMs / quota;
    const key = `${this.prefix}:${keySuffix}`;
    this.sweep();
    let allowance = this.allowances.get(key);
    if (!allowance) {
      allowance = { unused: 0, lapsesAt: 0, fullAt: 0, admitted: 0, refusedUntil: 0 };
      this.allowances.set(key, allowance);
    }
    const headers = (now: number, { refused = false } = {}) => {
      // The quota as this process last saw it, its own unused lease counted as still there; a
      // refused request has none left, whatever the local view says.
      const fullInMs = Math.max(0, allowance.fullAt - allowance.unused * intervalMs - now);
      const remaining = refused ? 0 : Math.max(0, Math.floor((windowMs - fullInMs) / intervalMs));
      return {
        'ratelimit-policy': `"${name}";q=${quota};w=${windowSeconds}`,
        ratelimit: `"${name}";r=${remaining};t=${Math.ceil(fullInMs / 1_000)}`,
      };
    };
    for (;;) {
      const now = performance.now();
      if (allowance.unused > 0 && now < allowance.lapsesAt) {
        allowance.unused--;
        allowance.admitted++;
        return { headers: headers(now) };
      }
      if (now < allowance.refusedUntil) {
        return {
          headers: headers(now, { refused: true }),
          retryAfter: Math.max(1, Math.ceil((allowance.refusedUntil - now) / 1_000)),
        };
      }
      allowance.pending ??= this.lease(key, allowance, quota, windowMs).finally(() => {
        allowance.pending = undefined;
      });
      await allowance.pending;
    }
  }

  /** Takes a new lease from Redis; the lapsed one's unused requests are dropped (already counted). */
  private async lease(key: string, allowance: Allowance, quota: number, windowMs: number): Promise<void> {
    const windowUs = windowMs * 1_000;
    const intervalUs = Math.max(1, Math.floor(windowUs / quota));
    const largest = Math.max(1, Math.floor((quota * leaseMs) / windowMs));
    // A lease used up asks for twice as much; one that lapsed, for what it admitted in its time.
    const used = Math.max(1, allowance.admitted);
    const wanted = Math.min(largest, allowance.unused === 0 ? 2 * used : used);
    const [granted, fullInUs, retryInUs] = (await this.redis.eval(
      leaseScript,
      1,
      key,
      String(intervalUs),
      String(windowUs),
      String(wanted),
    )) as [number, number, number];
    const now = performance.now();
    allowance.unused = granted;
    allowance.admitted = 0;
    allowance.lapsesAt = now + leaseMs;
    allowance.fullAt = now + fullInUs / 1_000;
    allowance.refusedUntil = granted > 0 ? 0 : now + retryInUs / 1_000;
  }

  /** Forgets allowances with nothing left to hold: no unused lease, no refusal, nothing pending. */
  private sweep(): void {
    const now = performance.now();
    if (now - this.sweptAt < sweepEveryMs) return;
    this.sweptAt = now;
    for (const [key, allowance] of this.allowances) {
      if (now >= allowance.lapsesAt && now >= allowance.refusedUntil && !allowance.pending) {
        this.allowances.delete(key);
      }
    }
  }
}

type HeaderSink = { setHeader(name: string, value: string): unknown };

/** The key's rate limit on one call: its headers on the answer, and a 429 past it. */
export async function takeRateLimit(
  limiter: RateLimiter,
  principal: Principal,
  res: HeaderSink,
): Promise<void> {
  answerRateLimit(
    await limiter.take(principal),
    res,
    'This API key has used its request quota; retry later.',
  );
}

/** A keyless proxy call's rate limit (per proxy): its headers on the answer, and a 429 past it. */
export async function takeProxyRateLimit(
  limiter: RateLimiter,
  proxy: { tenant_id: string; id: string },
  res: HeaderSink,
): Promise<void> {
  answerRateLimit(
    await limiter.takeForProxy(proxy.tenant_id, proxy.id),
    res,
    'This proxy has used its request quota; retry later.',
  );
}

function answerRateLimit(limited: RateLimitOutcome | undefined, res: HeaderSink, refusal: string): void {
  if (!limited) return;
  for (const [name, value] of Object.entries(limited.headers)) res.setHeader(name, value);
  if (limited.retryAfter !== undefined) throw tooManyRequests(refusal, limited.retryAfter);
}
