import { createHash, createHmac, type KeyObject, randomUUID } from 'node:crypto';
import {
  asProblem,
  badRequest,
  conflict,
  screenInput,
  unprocessable,
  type GuardedCall,
  type HandlerResult,
  type Redis,
  type SensitiveData,
  sensitiveData,
} from '@tokenvault/platform';
import {
  canonicalJson,
  DecryptionError,
  derivedKey,
  TenantKeysUnavailableError,
  type Vault,
} from '@tokenvault/vault';

export const idempotencyHeaders = ['idempotency-key', 'svc-idempotency-key'] as const;
export const replayedHeader = 'idempotency-replayed';
/** On a replay whose tokens' summaries and fingerprints were not kept: which fields. */
export const withheldFieldsHeader = 'idempotency-withheld-fields';

/** 1–255 printable ASCII characters (space to tilde). */
export const idempotencyKeyPattern = /^[\x20-\x7e]{1,255}$/;

/** The headers of a response that belong to it (not per-request ones like rate limits or ids). */
const keptHeaders = new Set(['content-type', 'location', 'x-read-model-lagging']);

export interface IdempotencyOptions {
  /** The Redis key prefix (QUEUE_PREFIX: test stacks and deployments keep to their own). */
  prefix: string;
  /** Keys the MACs of Redis keys and fingerprints (they hold no data). */
  masterKey: string;
  ttlSeconds: number;
  lockTtlMs: number;
}

type StoredResponse =
  | {
      status: number;
      headers: Record<string, string>;
      /** The JSON text sent, or the HTML page. */
      json?: string;
      html?: string;
    }
  /**
   * A route whose responses hold what nothing may keep (its `returnsSensitive`): only that the
   * request completed, its status, and what the route returns (for the replay's 409 to say why).
   */
  | { status: number; withheld: true; returns?: readonly SensitiveData[] };

/** Frees the key if (and only if) this request still holds it, or replaces it by the response. */
const finishScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`;

/**
 * Idempotency-Key (or SVC-IDEMPOTENCY-KEY) on POST, PUT and PATCH: the first completed response
 * is kept per tenant, application and key, sealed, and replayed for the same request; another
 * request under the key is a 422, and one while the first runs a 409. In Redis, so every gateway
 * process shares it:
 *
 * - `r|<owner>|<fingerprint>` while the first request runs (SET NX, IDEMPOTENCY_LOCK_TTL_MS),
 * - `d|<fingerprint>|<sealed response>` once it has answered (IDEMPOTENCY_TTL_SECONDS).
 *
 * The Redis key and the fingerprint are HMACs (the idempotency key and the body never appear).
 * The response is sealed under the tenant's data key, bound to the Redis key (so to the tenant,
 * application and idempotency key): deleting the tenant shreds it with the tenant's other data.
 * A route whose responses can hold token data or a secret (its `returnsSensitive` is not empty:
 * searches, a reactor's answer, detokenize, a new API key, a signing secret, a proxy key) has only
 * its status kept, never its response: a deleted token's data, or data its caller may no longer
 * see, must not come back from here, nor a secret that is shown once; a replay is a 409 saying why.
 * A route whose only kind is `token-summary` (a token write: its answer holds the token's card
 * and bank summaries and fingerprint as the caller's read decision showed them then) has its
 * answer kept without those fields, so that a retried create still gets its token's id and
 * status; the replay says so in `Idempotency-Withheld-Fields`.
 */
export class Idempotency {
  private readonly redis: Redis;
  private readonly vault: Vault;
  private readonly options: IdempotencyOptions;
  private readonly macKey: KeyObject;

  constructor(redis: Redis, vault: Vault, options: IdempotencyOptions) {
    this.redis = redis;
    this.vault = vault;
    this.options = options;
    this.macKey = derivedKey(options.masterKey, 'key and fingerprint mac v1', 'tokenvault/idempotency');
  }

  /** The key the request carries, or undefined; a malformed one is a 400 naming the header. */
  static keyOf(call: GuardedCall): string | undefined {
    const values = idempotencyHeaders
      .map((name) => call.req.get(name))
      .filter((value): value is string => value !== undefined);
    if (values.length === 0) return undefined;
    const errors: string[] = [];
    if (values.some((value) => !idempotencyKeyPattern.test(value)))
      errors.push('Must be 1–255 printable ASCII characters');
    if (values.length === 2 && values[0] !== values[1]) {
      errors.push('Idempotency-Key and SVC-IDEMPOTENCY-KEY differ');
    }
    if (errors.length > 0) {
      throw badRequest('The Idempotency-Key header is not valid.', { 'header.idempotency-key': errors });
    }
    return values[0];
  }

  async run(call: GuardedCall, key: string, run: () => Promise<HandlerResult>): Promise<HandlerResult> {
    const { principal, req, route } = call;
    // canonicalJson recurses: the input limits come first, as the route would check them (a deep
    // body is then a 400, not a stack overflow), also on routes that read no body.
    screenInput(req.body, 'body', { sealedFields: route.sealedBodyFields ?? [] });
    const tenantId = principal.tenantId;
    // Names the record: the tenant, application and idempotency key, as a MAC.
    const recordId = this.mac(`key\0${tenantId}\0${principal.actorId}\0${key}`);
    const redisKey = `${this.options.prefix}:idempotency:${recordId}`;
    const fingerprint = this.mac(
      `request\0${req.method}\0${req.originalUrl}\0${createHash('sha256')
        .update(req.body === undefined ? '' : canonicalJson(req.body))
        .digest('hex')}`,
    );
    const marker = `r|${randomUUID()}|${fingerprint}`;
    for (let attempt = 0; ; attempt++) {
      const taken = await this.redis.set(redisKey, marker, 'PX', this.options.lockTtlMs, 'NX');
      if (taken === 'OK') break;
      const current = await this.redis.get(redisKey);
      // Gone between the two calls (expired): try again.
      if (current === null && attempt < 3) continue;
      if (current === null) throw inFlight();
      const [state, second = '', third = ''] = current.split('|');
      const storedFingerprint = state === 'r' ? third : second;
      if (storedFingerprint !== fingerprint) {
        throw unprocessable('This Idempotency-Key was used for a different request (method, path or body).', {
          type: 'idempotency-key-reused',
        });
      }
      if (state === 'r') throw inFlight();
      return this.replay(tenantId, third, recordId, onlySummaries(route.returnsSensitive));
    }
    let stored: StoredResponse | undefined;
    const returns = route.returnsSensitive;
    const summariesOnly = onlySummaries(returns);
    const withheld = returns.length > 0 && !summariesOnly;
    try {
      const result = await run();
      if (storable(result.status)) {
        stored = withheld
          ? { status: result.status, withheld, returns }
          : responseOf(summariesOnly ? { ...result, body: withoutSummaries(result.body) } : result);
      }
      return result;
    } catch (error) {
      // What the central handler answers for it: a Problem, or a decider's DomainError mapped.
      const problem = asProblem(error);
      if (problem && storable(problem.status)) {
        // A reactor's own problem can quote what it was given: withheld like its answers.
        stored = withheld
          ? { status: problem.status, withheld, returns }
          : {
              status: problem.status,
              headers: { 'content-type': 'application/problem+json' },
              json: JSON.stringify({ ...problem.toJSON(), request_id: req.requestId }),
            };
      }
      throw error;
    } finally {
      // Unsealable (the tenant deleted meanwhile): the key is freed instead.
      const sealed = stored && (await this.seal(tenantId, stored, recordId).catch(() => undefined));
      const value = sealed ? `d|${fingerprint}|${sealed}` : '';
      await this.redis
        .eval(finishScript, 1, redisKey, marker, value, String(this.options.ttlSeconds * 1000))
        .catch(() => undefined);
    }
  }

  private async replay(
    tenantId: string,
    sealed: string,
    recordId: string,
    summariesOnly: boolean,
  ): Promise<HandlerResult> {
    const response = await this.open(tenantId, sealed, recordId);
    if (!response || 'withheld' in response) throw responseNotKept(response?.status, response?.returns);
    const headers: Record<string, string> = { ...response.headers, [replayedHeader]: 'true' };
    if (response.html !== undefined) return { status: response.status, headers, html: response.html };
    if (response.json === undefined) return { status: response.status, headers };
    const body = JSON.parse(response.json) as unknown;
    if (!summariesOnly) return { status: response.status, headers, body };
    // Removed again: a record kept whole before the route declared its summaries has them still.
    headers[withheldFieldsHeader] = summaryFields.join(', ');
    return { status: response.status, headers, body: withoutSummaries(body) };
  }

  private mac(text: string): string {
    return createHmac('sha256', this.macKey).update(text, 'utf8').digest('base64url');
  }

  /** Sealing a record costs one AES-GCM under the tenant's data key (kept in memory by the vault). */
  private seal(tenantId: string, response: StoredResponse, recordId: string): Promise<string> {
    return this.vault.encrypt(tenantId, recordSubject(recordId), response);
  }

  /**
   * The record, or undefined when it does not open: sealed before records were sealed under the
   * tenant's key (under a key derived from MASTER_KEY), or under a tenant key version gone since.
   */
  private async open(
    tenantId: string,
    sealed: string,
    recordId: string,
  ): Promise<StoredResponse | undefined> {
    try {
      return (await this.vault.decrypt(tenantId, recordSubject(recordId), sealed)) as StoredResponse;
    } catch (error) {
      if (error instanceof DecryptionError || error instanceof TenantKeysUnavailableError) return undefined;
      throw error;
    }
  }
}

/** What a record is sealed for, bound to its id (`/` never occurs in a token id). */
const recordSubject = (recordId: string) => `idempotency/${recordId}`;

/** The fields of a token (or intent) that follow the caller's read decision at the time. */
const summaryFields = ['card', 'bank', 'fingerprint'] as const;

/** A route whose answers are kept, without the tokens' summaries and fingerprints. */
const onlySummaries = (returns: readonly SensitiveData[]) =>
  returns.length > 0 && returns.every((kind) => kind === 'token-summary');

/** A token or a token intent as an answer shows it (a problem, a page or the caller's JSON is none). */
const isTokenLike = (value: Record<string, unknown>) =>
  typeof value.id === 'string' &&
  typeof value.tenant_id === 'string' &&
  typeof value.type === 'string' &&
  typeof value.created_at === 'string';

/**
 * The answer without the `card`, `bank` and `fingerprint` of each token in it, wherever it is:
 * the answer itself, a list of them, or anywhere in POST /tokenize's answer (the body as sent).
 */
export function withoutSummaries(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSummaries);
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  const tokenLike = isTokenLike(object);
  return Object.fromEntries(
    Object.entries(object)
      .filter(([name]) => !(tokenLike && (summaryFields as readonly string[]).includes(name)))
      .map(([name, inner]) => [name, withoutSummaries(inner)]),
  );
}

/** Server errors and 429s are not kept: the client may retry them. */
const storable = (status: number) => status < 500 && status !== 429;

function responseOf(result: HandlerResult): Exclude<StoredResponse, { withheld: true }> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) {
    if (keptHeaders.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
  }
  if (result.html !== undefined) {
    return {
      status: result.status,
      headers: { 'content-type': 'text/html; charset=utf-8', ...headers },
      html: result.html,
    };
  }
  if (result.body === undefined) return { status: result.status, headers };
  return {
    status: result.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    json: JSON.stringify(result.body),
  };
}

const inFlight = () =>
  conflict('A request with this Idempotency-Key is still being processed; retry later.', {
    type: 'idempotency-key-in-use',
    retryAfter: 1,
  });

/**
 * A replay of a request whose response was not kept: it ran once, and does not run again. A record
 * kept before routes named what they return was a token data route's (the only kind withheld then).
 */
const responseNotKept = (status: number | undefined, returns: readonly SensitiveData[] = ['token-data']) =>
  conflict(
    `The first request with this Idempotency-Key completed${status === undefined ? '' : ` with status ${status}`}; ` +
      `its response is not kept: this operation’s responses can hold ${returns.map((kind) => sensitiveData[kind]).join('; ')}. ` +
      'Send a new Idempotency-Key to run it again.',
    { type: 'idempotency-response-not-kept' },
  );
