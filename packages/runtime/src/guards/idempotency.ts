import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  type KeyObject,
  randomBytes,
  randomUUID,
} from 'node:crypto';
import {
  badRequest,
  Problem,
  screenInput,
  type GuardedCall,
  type HandlerResult,
  type Redis,
} from '@tokenvault/platform';
import { canonicalJson, derivedKey } from '@tokenvault/vault';

export const idempotencyHeaders = ['idempotency-key', 'svc-idempotency-key'] as const;
export const replayedHeader = 'idempotency-replayed';

/** 1–255 printable ASCII characters (space to tilde). */
export const idempotencyKeyPattern = /^[\x20-\x7e]{1,255}$/;

/** The headers of a response that belong to it (not per-request ones like rate limits or ids). */
const keptHeaders = new Set(['content-type', 'location', 'x-read-model-lagging']);

export interface IdempotencyOptions {
  /** The Redis key prefix (QUEUE_PREFIX: test stacks and deployments keep to their own). */
  prefix: string;
  masterKey: string;
  ttlSeconds: number;
  lockTtlMs: number;
}

interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** The JSON text sent, or the HTML page. */
  json?: string;
  html?: string;
}

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
 * The Redis key and the fingerprint are HMACs (the idempotency key and the body never appear),
 * and the response is sealed with AES-256-GCM, the tenant, application and key as associated data.
 */
export class Idempotency {
  private readonly redis: Redis;
  private readonly options: IdempotencyOptions;
  private readonly sealKey: KeyObject;
  private readonly macKey: KeyObject;

  constructor(redis: Redis, options: IdempotencyOptions) {
    this.redis = redis;
    this.options = options;
    this.sealKey = derivedKey(options.masterKey, 'response seal v1', 'tokenvault/idempotency');
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
    const scope = `${principal.tenantId}\0${principal.actorId}\0${key}`;
    const redisKey = `${this.options.prefix}:idempotency:${this.mac(`key\0${scope}`)}`;
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
        throw new Problem(
          422,
          'idempotency-key-reused',
          'Unprocessable Entity',
          'This Idempotency-Key was used for a different request (method, path or body).',
        );
      }
      if (state === 'r') throw inFlight();
      return this.replay(third, scope);
    }
    let stored: StoredResponse | undefined;
    try {
      const result = await run();
      if (storable(result.status)) stored = responseOf(result);
      return result;
    } catch (error) {
      if (error instanceof Problem && storable(error.status)) {
        stored = {
          status: error.status,
          headers: { 'content-type': 'application/problem+json' },
          json: JSON.stringify({ ...error.toJSON(), request_id: req.requestId }),
        };
      }
      throw error;
    } finally {
      const value = stored ? `d|${fingerprint}|${this.seal(stored, scope)}` : '';
      await this.redis
        .eval(finishScript, 1, redisKey, marker, value, String(this.options.ttlSeconds * 1000))
        .catch(() => undefined);
    }
  }

  private replay(sealed: string, scope: string): HandlerResult {
    const response = this.open(sealed, scope);
    const headers = { ...response.headers, [replayedHeader]: 'true' };
    if (response.html !== undefined) return { status: response.status, headers, html: response.html };
    return {
      status: response.status,
      headers,
      ...(response.json === undefined ? {} : { body: JSON.parse(response.json) as unknown }),
    };
  }

  private mac(text: string): string {
    return createHmac('sha256', this.macKey).update(text, 'utf8').digest('base64url');
  }

  private seal(response: StoredResponse, scope: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv);
    cipher.setAAD(Buffer.from(scope, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(response), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
  }

  private open(sealed: string, scope: string): StoredResponse {
    const bytes = Buffer.from(sealed, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.sealKey, bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(scope, 'utf8'));
    decipher.setAuthTag(bytes.subarray(12, 28));
    const plaintext = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
    return JSON.parse(plaintext.toString('utf8')) as StoredResponse;
  }
}

/** Server errors and 429s are not kept: the client may retry them. */
const storable = (status: number) => status < 500 && status !== 429;

function responseOf(result: HandlerResult): StoredResponse {
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
  new Problem(
    409,
    'idempotency-key-in-use',
    'Conflict',
    'A request with this Idempotency-Key is still being processed; retry later.',
    undefined,
    { 'retry-after': '1' },
  );
