import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';

/** An IPv4 or IPv6 address, optionally with a prefix length (`10.0.0.0/8`, `fd00::/8`). */
function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

/** A web origin as browsers send it in `Origin`: http(s), host, optional port, nothing else. */
function isOrigin(entry: string): boolean {
  if (!URL.canParse(entry)) return false;
  const url = new URL(entry);
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === entry;
}

const base64Key32 = z
  .string()
  .refine((value) => Buffer.from(value, 'base64').length === 32, 'must be 32 bytes, base64-encoded');

/** HTTP_PROCESSES when unset: the cores this process may use but one, at least one. */
export function defaultHttpProcesses(cores = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

/** The one schema for every setting the service reads from its environment. */
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /**
   * HTTP processes of the all-in-one and the gateway: the machine's cores but one (left to what
   * runs once: processors, workers, PostgreSQL on a shared box), at least one.
   */
  HTTP_PROCESSES: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(() => defaultHttpProcesses()),
  HOST: z.string().min(1).default('0.0.0.0'),
  PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.url().default('postgres://postgres@127.0.0.1:5432/tokenvault'),
  DATABASE_APP_ROLE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/, 'must be a plain lower-case PostgreSQL role name')
    .default('tokenvault_app'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(10),
  /** The query pool's planner cost of a random page read (PostgreSQL's `random_page_cost`). */
  DATABASE_RANDOM_PAGE_COST: z.coerce.number().min(0.1).max(100).default(1.1),
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  MASTER_KEY: base64Key32.optional(),
  MASTER_KEY_FILE: z.string().min(1).default('.data/master.key'),
  /** A versioned master keyring, `<id>:<base64>,…`: the first wraps new keys, all unwrap. */
  MASTER_KEYS: z
    .string()
    .regex(
      /^[A-Za-z0-9._-]+:[A-Za-z0-9+/=]+(,[A-Za-z0-9._-]+:[A-Za-z0-9+/=]+)*$/,
      'like a:<base64>,b:<base64>',
    )
    .refine(
      (value) => value.split(',').every((entry) => Buffer.from(entry.split(':')[1]!, 'base64').length === 32),
      'every key must be 32 bytes, base64-encoded',
    )
    .refine(
      (value) =>
        new Set(value.split(',').map((entry) => entry.split(':')[0])).size === value.split(',').length,
      'key ids must be distinct',
    )
    .optional(),
  /** Where the master keys are: `local` (MASTER_KEYS / MASTER_KEY) or an HSM through `pkcs11`. */
  KEK_PROVIDER: z.enum(['local', 'pkcs11']).default('local'),
  PKCS11_MODULE: z.string().min(1).optional(),
  PKCS11_TOKEN_LABEL: z.string().min(1).optional(),
  PKCS11_PIN: z.string().min(1).optional(),
  PKCS11_PIN_FILE: z.string().min(1).optional(),
  /** Labels of the HSM's AES keys, comma-separated: the first wraps, all unwrap. */
  PKCS11_KEY_LABELS: z
    .string()
    .regex(/^[^,\s]+(,[^,\s]+)*$/, 'labels, comma-separated')
    .optional(),
  /** Unwrapped token keys kept in memory per process (LRU); 0 keeps none. */
  TOKEN_KEY_CACHE_SIZE: z.coerce.number().int().min(0).max(10_000_000).default(10_000),
  TOKEN_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
  /**
   * `off`: token data is sealed under the tenant key as before per-token keys (a deleted token's
   * data is not shredded): only for comparison benchmarks of the same build.
   */
  TOKEN_KEYS: z.enum(['on', 'off']).default('on'),
  /** How often expired tokens' keys are destroyed (one process at a time). */
  TOKEN_KEY_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** How often token intents past their expiry are expired and their keys destroyed. */
  TOKEN_INTENT_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** How long a card token keeps its CVC before the worker removes it (PCI DSS: until authorisation). */
  CARD_CVC_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .default(3600),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `pretty`: coloured lines for a person (pino-pretty); `json`: one JSON object a line. Unset: pretty in development only. */
  LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/, 'like 256kb or 1mb')
    .default('256kb'),
  INCLUDED_MONTHLY_ACTIVE_TOKENS: z.coerce.number().int().min(0).default(1_000),
  API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  REACTOR_CACHE_TTL_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  READ_YOUR_WRITES_TIMEOUT_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  KAFKA_BROKERS: z
    .string()
    .regex(/^[^\s,]+:\d+(,[^\s,]+:\d+)*$/, 'host:port, comma-separated')
    .optional(),
  KAFKA_TOPIC_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ -')
    .default('tokenvault'),
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(3),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/\S+$/, 'like smtp://user:pass@host:587 or smtps://host:465')
    .default('smtp://127.0.0.1:1025'),
  SMTP_FROM: z.string().min(3).default('Tokenvault <no-reply@tokenvault.local>'),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ -')
    .default('tokenvault'),
  EMAIL_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
  EMAIL_BACKOFF_MS: z.coerce.number().int().min(1).max(3_600_000).default(5_000),
  INVITATION_EMAILS_PER_INVITATION: z.coerce.number().int().min(1).max(1000).default(3),
  INVITATION_EMAILS_PER_INVITATION_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .max(86_400_000)
    .default(600_000),
  INVITATION_EMAILS_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000).default(10),
  INVITATION_EMAILS_PER_ADDRESS_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .max(86_400_000)
    .default(3_600_000),
  REACTOR_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  REACTOR_CPU_TIME_MS: z.coerce.number().int().min(10).max(300_000).default(5_000),
  REACTOR_MEMORY_MB: z.coerce.number().int().min(16).max(4_096).default(128),
  REACTOR_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  REACTOR_PROCESSES: z.coerce.number().int().min(1).max(64).default(1),
  REACTOR_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  REACTOR_MAX_SERVICE_CALLS: z.coerce.number().int().min(1).max(10_000).default(100),
  REACTOR_RESULT_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 24 * 3600)
    .default(24 * 3600),
  /**
   * Internal destinations the proxy may reach (comma-separated IPs or CIDRs, IPv4 or IPv6; empty:
   * only public addresses over https). Plain http is allowed only to these.
   */
  PROXY_ALLOWED_PRIVATE_ADDRESSES: z
    .string()
    .default('')
    .refine(
      (value) => value.split(',').every((entry) => entry.trim() === '' || isAddressOrCidr(entry.trim())),
      'IPs or CIDRs, comma-separated (e.g. 10.0.0.0/8,fd00::/8)',
    ),
  /**
   * Internal receivers webhooks may deliver to (comma-separated IPs or CIDRs, IPv4 or IPv6; empty:
   * only public addresses over https). Plain http is allowed only to these.
   */
  WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: z
    .string()
    .default('')
    .refine(
      (value) => value.split(',').every((entry) => entry.trim() === '' || isAddressOrCidr(entry.trim())),
      'IPs or CIDRs, comma-separated (e.g. 10.0.0.0/8,fd00::/8)',
    ),
  /** One webhook delivery, connection to last byte; past it the attempt failed. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** Most bytes of a receiver's answer read (the rest is not wanted: only its status counts). */
  WEBHOOK_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(1024 * 1024)
    .default(64 * 1024),
  /** A PEM file of certificate authorities trusted for webhook receivers besides the system's. */
  WEBHOOK_CA_FILE: z.string().min(1).optional(),
  /** Attempts of one delivery; with WEBHOOK_BACKOFF_MS' default, 17 attempts span about a day. */
  WEBHOOK_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(17),
  /** Deliveries in a row that failed every attempt after which their webhook is disabled. */
  WEBHOOK_DISABLE_AFTER_FAILURES: z.coerce.number().int().min(1).max(1_000).default(5),
  /** How long the delivery history keeps a delivery. */
  WEBHOOK_HISTORY_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /** The first retry's delay; it doubles at each attempt (capped at 6 h), less a random part of up to half. */
  WEBHOOK_BACKOFF_MS: z.coerce.number().int().min(1).max(3_600_000).default(5_000),
  /** How long a replaced signing key keeps signing beside the new one: receivers switch meanwhile. */
  WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(30 * 24 * 3600)
    .default(24 * 3600),
  /**
   * A sender's lock on the delivery in flight (renewed every half of it): a sender that dies
   * mid-delivery has it taken up again within about this long, at least once, never lost.
   */
  WEBHOOK_DELIVERY_LOCK_MS: z.coerce.number().int().min(1_000).max(600_000).default(10_000),
  /**
   * How often each sender looks for webhooks with deliveries due and no drain (a retry's time
   * come, a drain lost with its sender): the longest such a delivery waits.
   */
  WEBHOOK_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(1_000),
  /** The most deliveries of one webhook a drain sends between two records of their outcomes. */
  WEBHOOK_DRAIN_BATCH_SIZE: z.coerce.number().int().min(1).max(1_000).default(100),
  /**
   * How long a sender keeps a tenant's opened signing secrets: a rotation drops them at once (its
   * invalidation); this bounds a lost invalidation (the replaced secret signs on through the overlap).
   */
  WEBHOOK_SIGNING_SECRETS_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /** How long a proxied call may take, end to end; past it the caller gets 408. */
  PROXY_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
  /** A PEM file of certificate authorities trusted for destinations besides the system's (internal CAs). */
  PROXY_CA_FILE: z.string().min(1).optional(),
  /** Most bytes of a proxied request body (non-JSON types; JSON is capped by BODY_LIMIT): 413. */
  PROXY_MAX_REQUEST_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  /** Most bytes of a destination's response body: past it the caller gets 502. */
  PROXY_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(256 * 1024 * 1024)
    .default(10 * 1024 * 1024),
  /** When set, GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
  /** How long a completed response is kept (sealed) for replay under its Idempotency-Key. */
  IDEMPOTENCY_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .default(24 * 3600),
  /** How long an in-flight marker holds a key (a crashed request frees it after this). */
  IDEMPOTENCY_LOCK_TTL_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
  /** Requests per minute per API key (GCRA, a full minute's worth may come at once); 0: no limit. */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).max(10_000_000).default(6_000),
  REACTOR_MAX_CONCURRENT_PER_TENANT: z.coerce.number().int().min(1).max(10_000).default(20),
  /**
   * `inline`: the read models a client reads back at once are written in the append's own
   * transaction (the event store is the read models' PostgreSQL database); `async`: every read
   * model is written by the projector, and a write waits for it (an event store elsewhere).
   */
  PROJECTIONS: z.enum(['inline', 'async']).default('inline'),
  /**
   * Group commit: the appends that arrive within this many milliseconds of each other (and while
   * a batch is being committed) share one transaction; 0: every append has its own.
   */
  APPEND_GROUP_COMMIT_MS: z.coerce.number().int().min(0).max(100).default(1),
  /** Most appends in one group-committed transaction: a full batch goes without waiting. */
  APPEND_GROUP_COMMIT_MAX: z.coerce.number().int().min(1).max(1_000).default(100),
  /**
   * How long an event processor's lease lasts: of the replicas running one processor, one holds
   * the lease and works, the others stand by; when the holder dies, one of them takes over within
   * this time (docs/deployment.md). Renewed every third of it.
   */
  PROCESSOR_LEASE_MS: z.coerce.number().int().min(300).max(600_000).default(10_000),
  /** `on`: the tree-head signer chains the event log's tree heads (docs/verifiable-log.md). */
  LOG_TREE_HEADS: z.enum(['on', 'off']).default('on'),
  /** Most events one tree head covers (fewer when fewer are waiting). */
  LOG_TREE_HEAD_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(1_000),
  /** Shortest time between two tree heads: what is appended meanwhile goes into the next one. */
  LOG_TREE_HEAD_INTERVAL_MS: z.coerce.number().int().min(0).max(60_000).default(100),
  /** Ed25519 key that signs the tree heads: base64 of a 32-byte seed or of PKCS#8 DER. Never logged. */
  LOG_SIGNING_KEY: z
    .string()
    .refine(
      (value) => [32, 48].includes(Buffer.from(value, 'base64').length),
      'must be an Ed25519 key: base64 of a 32-byte seed or of its 48-byte PKCS#8 DER',
    )
    .optional(),
  /** A member's session ends after this long without a request (sliding). */
  SESSION_IDLE_TIMEOUT_MS: z.coerce.number().int().min(60_000).max(86_400_000).default(1_800_000),
  /** ...and this long after sign-in, however active. */
  SESSION_ABSOLUTE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .max(30 * 86_400_000)
    .default(43_200_000),
  /**
   * Sign-in e-mails one address may be sent per hour from one client address (GCRA; also counted
   * for unknown addresses): a flood from one client does not lock the owner out elsewhere.
   */
  SIGN_IN_EMAILS_PER_ADDRESS_CLIENT_PER_HOUR: z.coerce.number().int().min(1).max(10_000).default(5),
  /** ...and from all clients together (an inbox is not flooded from many clients). */
  SIGN_IN_EMAILS_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(20),
  /** Sign-in e-mail requests one client address (an IPv6 client: its /64) may make per hour. */
  SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(30),
  /**
   * Origins (`https://shop.example`, comma-separated) whose browser pages may call the API with
   * an API key: CORS, never with credentials. Unset: none.
   */
  CORS_ALLOWED_ORIGINS: z
    .string()
    .trim()
    .refine(
      (value) => value === '' || value.split(',').every((entry) => isOrigin(entry.trim())),
      'origins, comma-separated, each scheme://host[:port] with no path or trailing slash (e.g. https://shop.example,http://localhost:3000); * is not accepted',
    )
    .transform((value) => (value === '' ? [] : value.split(',').map((entry) => entry.trim())))
    .default([]),
  /**
   * The proxies in front of the gateway whose X-Forwarded-For is believed (express's `trust
   * proxy`): unset, none (the client is the socket's address); a hop count (`1`: the address the
   * nearest proxy appended); or the proxies' IPs/CIDRs, comma-separated.
   */
  TRUST_PROXY: z
    .string()
    .trim()
    .refine(
      (value) =>
        value === '' ||
        /^\d{1,2}$/.test(value) ||
        value.split(',').every((entry) => isAddressOrCidr(entry.trim())),
      'a hop count (e.g. 1) or the proxies’ IPs/CIDRs, comma-separated (e.g. 10.0.0.0/8,fd00::/8)',
    )
    .transform((value): false | number | string[] =>
      value === ''
        ? false
        : /^\d+$/.test(value)
          ? Number(value)
          : value.split(',').map((entry) => entry.trim()),
    )
    .default(false),
  /**
   * Set: events go to this KurrentDB (EventStoreDB) server, read models, checkpoints and claims
   * stay in DATABASE_URL, and projections are async. Unset: events in DATABASE_URL too.
   */
  EVENTSTORE_URL: z
    .string()
    .regex(
      /^(kurrentdb|kurrent|kdb|esdb)(\+discover)?:\/\/\S+$/i,
      'a kurrentdb:// (or esdb://) connection string',
    )
    .optional(),
});

export type Config = z.infer<typeof configSchema> & { PUBLIC_URL: string; MASTER_KEY: string };

export class ConfigError extends Error {
  readonly issues: string[];
  constructor(issues: string[]) {
    super(`invalid configuration:\n  ${issues.join('\n  ')}`);
    this.issues = issues;
  }
}

/**
 * Settings under a former name, and their name now: set under the old one, a setting would be
 * ignored without a word (LOG_SEALING=off would sign tree heads again), so it is refused instead.
 */
const renamedSettings = {
  LOG_SEALING: 'LOG_TREE_HEADS',
  LOG_SEAL_BATCH_SIZE: 'LOG_TREE_HEAD_BATCH_SIZE',
  LOG_SEAL_INTERVAL_MS: 'LOG_TREE_HEAD_INTERVAL_MS',
} as const;

/**
 * Parses the environment. Without MASTER_KEY a development key is generated once and kept in
 * MASTER_KEY_FILE (gitignored), so a restarted dev server can still decrypt its own data.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const renamed = Object.entries(renamedSettings)
    .filter(([former]) => env[former] !== undefined)
    .map(([former, now]) => `${former}: renamed ${now}; set ${now} instead`);
  if (renamed.length) throw new ConfigError(renamed);
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const config = parsed.data;
  // An event store outside PostgreSQL cannot write read models in its append's transaction.
  if (config.EVENTSTORE_URL) {
    if (env.PROJECTIONS === 'inline') {
      throw new ConfigError([
        'PROJECTIONS: inline needs the events in PostgreSQL; with EVENTSTORE_URL set, leave PROJECTIONS unset or async',
      ]);
    }
    config.PROJECTIONS = 'async';
  }
  const issues = keyringIssues(config);
  if (issues.length) throw new ConfigError(issues);
  // The secret invitation links and idempotency records are derived from (never a tenant key's
  // wrapper with MASTER_KEYS or an HSM): MASTER_KEY, else the ring's primary.
  const primaryOfRing = config.MASTER_KEYS?.split(',')[0]?.split(':')[1];
  const masterKey =
    config.MASTER_KEY ?? primaryOfRing ?? readOrCreateDevMasterKey(config.MASTER_KEY_FILE, config.NODE_ENV);
  return {
    ...config,
    MASTER_KEY: masterKey,
    PUBLIC_URL: (config.PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/$/, ''),
  };
}

function keyringIssues(config: z.infer<typeof configSchema>): string[] {
  const issues: string[] = [];
  if (config.MASTER_KEY && config.MASTER_KEYS) {
    issues.push('MASTER_KEYS: set either MASTER_KEYS or MASTER_KEY (a one-key ring "default"), not both');
  }
  if (config.KEK_PROVIDER === 'pkcs11') {
    for (const name of ['PKCS11_MODULE', 'PKCS11_TOKEN_LABEL', 'PKCS11_KEY_LABELS'] as const) {
      if (!config[name]) issues.push(`${name}: required with KEK_PROVIDER=pkcs11`);
    }
    if (!config.PKCS11_PIN === !config.PKCS11_PIN_FILE) {
      issues.push('PKCS11_PIN: set one of PKCS11_PIN or PKCS11_PIN_FILE with KEK_PROVIDER=pkcs11');
    }
    if (config.MASTER_KEYS)
      issues.push('MASTER_KEYS: not used with KEK_PROVIDER=pkcs11 (PKCS11_KEY_LABELS is the ring)');
  }
  return issues;
}

function readOrCreateDevMasterKey(file: string, nodeEnv: string): string {
  if (nodeEnv === 'production') throw new ConfigError(['MASTER_KEY: required in production']);
  const path = resolve(file);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  mkdirSync(dirname(path), { recursive: true });
  const key = randomBytes(32).toString('base64');
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  return key;
}
