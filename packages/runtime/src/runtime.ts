import {
  createLogger,
  createPool,
  createRedis,
  ensureDatabase,
  migrate,
  type Config,
  type Logger,
  type Pool,
  type Redis,
  type RouteDefinition,
  type Authenticate,
  systemClock,
  type Clock,
  redisOutageLogOf,
} from '@tokenvault/platform';
import { eventStoreMigrations, type EventStore, type RecordedEvent } from '@tokenvault/eventstore';
import { ReadModelConsistency, projectorMigrations, type Projector } from '@tokenvault/cqrs';
import { openMasterKeyring, tokenOfKeyInvalidation, Vault, vaultMigrations } from '@tokenvault/vault';
import {
  ApplicationQueries,
  createAuthenticator,
  InvitationLinks,
  InvitationMailLimits,
  InvitationQueries,
  MemberQueries,
  tenantOfKeysInvalidation,
  createCallerAuthenticator,
  Sessions,
  SignInLinks,
} from '@tokenvault/tenancy';
import { createSignInMailQueue, enqueueSignInMail } from '@tokenvault/mail';
import { Detokenizer, ReadAuditor, TokenCommands, TokenQueries, tokensContext } from '@tokenvault/tokens';
import { FormulaQueries, ReactorDefinitions, ReactorQueries } from '@tokenvault/reactors';
import { AddressAllowlist } from '@tokenvault/destinations';
import { ProxyGateway, ProxyPipeline, ProxyQueries } from '@tokenvault/proxy';
import { CodeRunQueue } from '@tokenvault/code-runs';
import {
  createWebhookDeliveryQueue,
  enqueueDeliveries,
  redeliver,
  WebhookQueries,
} from '@tokenvault/webhooks';

import { contextInvalidationsOf, contextMigrations, contextRoutes, type ContextDeps } from './contexts.ts';
import { readModelsProjectorName } from './projections.ts';
import { connectEventStore } from './event-log.ts';
import { logSigningKeyOf, readModelsProjector } from './subscribers.ts';
import { checkExternalEventStore } from './external-store.ts';
import { checkProjectionMode, projectionModeMigrations } from './projection-mode.ts';
import { startScrapeMetrics } from './scrape-metrics.ts';
import { signInAllowance } from './sign-in-caps.ts';
import { RateLimiter, takeProxyRateLimit, takeRateLimit } from './guards/index.ts';

/** In dependency order: infrastructure first, then each context's tables (contexts.ts). */
export const allMigrations = [
  ...eventStoreMigrations,
  ...projectorMigrations,
  ...vaultMigrations,
  ...contextMigrations,
  ...projectionModeMigrations,
];

/**
 * Creates and migrates the database, and checks that its read models were built in this
 * process's PROJECTIONS mode (`forRebuild`: the rebuild command, which makes them so, skips that).
 */
export async function prepareDatabase(
  config: Config,
  logger: Logger,
  options: { forRebuild?: boolean } = {},
): Promise<void> {
  await checkExternalEventStore(config);
  await ensureDatabase(config.DATABASE_URL);
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    max: 1,
    applicationName: 'tokenvault-migrate',
  });
  try {
    const applied = await migrate(pool, allMigrations, config.DATABASE_APP_ROLE);
    if (applied.length) logger.info({ applied }, 'database migrated');
    if (!options.forRebuild) await checkProjectionMode(pool, config.PROJECTIONS);
  } finally {
    await pool.end();
  }
}

/**
 * What the roles that run commands share (the gateway, the worker and the admin commands): the
 * owner's event store and its LISTEN connection, the app-role pool, the vault, read-model
 * consistency and the caches it invalidates. No Redis, no queues: those are the gateway's
 * (createRuntime) and the worker's.
 */
export interface RuntimeBase {
  config: Config;
  logger: Logger;
  /** The schema owner: event store, vault keys, projector, key resolution. */
  ownerPool: Pool;
  /** The app role under row-level security: every tenant-scoped read. */
  appPool: Pool;
  store: EventStore;
  vault: Vault;
  consistency: ReadModelConsistency;
  /** Where commands and queries take "now" from (tests may set a controllable one). */
  clock: Clock;
  /** Derives and checks invitation link tokens (from MASTER_KEY). */
  invitationLinks: InvitationLinks;
  /** Members' sign-in links and sessions. */
  sessions: Sessions;
  /** The process's token queries and read auditor (one group commit of reads per process). */
  tokenQueries: TokenQueries;
  readAuditor: ReadAuditor;
  /** The process's token commands: the gateway's token routes and the worker's share them. */
  tokenCommands: TokenCommands;
  /** The process's detokenizer: POST /detokenize, reactor invocations and the proxy share it. */
  detokenizer: Detokenizer;
  /** The token routes, on this base: what a reactor's `svc` client calls in-process. */
  tokenRoutes: RouteDefinition[];
  /** A projector of the read models on this base's pool (admin commands catch up with it). */
  createProjector(): Projector;
  close(): Promise<void>;
}

/** Every route of the service, with what the gateway alone opens: Redis, the producers' queues. */
export interface Runtime extends RuntimeBase {
  redis: Redis;
  authenticate: Authenticate;
  routes: RouteDefinition[];
  /** Reactor runs queued by this process (the gateway waits on async ones for the tenant's cap). */
  reactorRuns: CodeRunQueue;
  /** `/proxy/**`: requests detokenized in flight to third parties. */
  proxy: ProxyGateway;
  /**
   * The process's one rate limiter (it holds leases per key): the route guard's, /proxy's and
   * the sign-in caps' allowances.
   */
  rateLimiter: RateLimiter;
}

export async function openRuntimeBase(
  config: Config,
  logger: Logger,
  options: { clock?: Clock } = {},
): Promise<RuntimeBase> {
  const clock = options.clock ?? systemClock;
  const poolSize = config.DATABASE_POOL_SIZE;
  // Caches of this process learn of its own writes at once (other processes by NOTIFY).
  let onCommitted = (_events: readonly RecordedEvent[]) => {};
  const owner = await connectEventStore(config, logger, {
    applicationName: 'tokenvault',
    max: poolSize,
    onCommitted: (events) => onCommitted(events),
  });
  const { pool: ownerPool, store, notifications } = owner;
  const appPool = createPool({
    connectionString: config.DATABASE_URL,
    max: poolSize,
    onIdleClientError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    role: config.DATABASE_APP_ROLE,
    // PostgreSQL's default (4) prices a random page as a disk seek; read models are read from
    // memory or SSD. At 4 a deep child page sorted all of the parent's association rows instead
    // of walking the covering index (4 ms against 1.2 ms a query; docs/decisions.md).
    settings: { random_page_cost: config.DATABASE_RANDOM_PAGE_COST },
    applicationName: 'tokenvault-queries',
  });
  const vault = new Vault(ownerPool, openMasterKeyring(config), {
    tokenKeyCacheSize: config.TOKEN_KEY_CACHE_SIZE,
    tokenKeyCacheTtlMs: config.TOKEN_KEY_CACHE_TTL_MS,
    perTokenKeys: config.TOKEN_KEYS === 'on',
  });
  // A ring that cannot unwrap every stored key refuses to start (never a 500 later).
  await vault.assertRingCoversStoredKeys();
  const consistency = new ReadModelConsistency({
    notifications,
    pool: ownerPool,
    projectorName: readModelsProjectorName,
    timeoutMs: config.READ_YOUR_WRITES_TIMEOUT_MS,
    inline: config.PROJECTIONS === 'inline',
    headPosition: () => store.headPosition(),
  });
  await consistency.start();
  onCommitted = (events) => {
    for (const event of events) {
      for (const key of contextInvalidationsOf(event)) consistency.invalidate(key);
    }
  };
  // Keys unwrapped in memory go when their tenant is deleted (and all after a lost notification
  // connection, when a deletion may have been missed).
  consistency.onInvalidation((key) => {
    if (key === null) return vault.forget(null);
    const token = tokenOfKeyInvalidation(key);
    if (token) return vault.forgetToken(token.tenantId, token.tokenId);
    const tenantId = tenantOfKeysInvalidation(key);
    if (tenantId) vault.forget(tenantId);
  });
  const sessions = new Sessions({
    pool: ownerPool,
    links: new SignInLinks(config.MASTER_KEY),
    clock,
    settings: {
      idleTimeoutMs: config.SESSION_IDLE_TIMEOUT_MS,
      absoluteTimeoutMs: config.SESSION_ABSOLUTE_TIMEOUT_MS,
    },
  });
  // Built once for the process: the gateway's routes and the worker's svc client share them.
  const tokenQueries = new TokenQueries(appPool, clock);
  const readAuditor = new ReadAuditor(store, clock);
  const tokenCommands = new TokenCommands(store, vault, tokenQueries, clock, {
    cardCvcTtlSeconds: config.CARD_CVC_TTL_SECONDS,
  });
  const detokenizer = new Detokenizer({ store, vault, tokenQueries, readAuditor });
  const projectors: Projector[] = [];
  return {
    config,
    logger,
    ownerPool,
    appPool,
    store,
    vault,
    consistency,
    clock,
    invitationLinks: new InvitationLinks(config.MASTER_KEY),
    sessions,
    tokenQueries,
    readAuditor,
    tokenCommands,
    detokenizer,
    tokenRoutes: tokensContext.routes({
      store,
      appPool,
      vault,
      consistency,
      clock,
      includedMonthlyActiveTokens: config.INCLUDED_MONTHLY_ACTIVE_TOKENS,
      tokenQueries,
      readAuditor,
      tokenCommands,
      detokenizer,
    }),
    createProjector() {
      const projector = readModelsProjector(config, { store, pool: ownerPool }, logger);
      projectors.push(projector);
      return projector;
    },
    async close() {
      for (const projector of projectors) await projector.stop();
      await consistency.close();
      await Promise.all([owner.close(), appPool.end()]);
      await vault.ring.close();
    },
  };
}

/**
 * The gateway's runtime: the shared base, Redis (rate limits, caps, idempotency, readiness), the
 * producers of the sign-in e-mail and reactor run queues, the queue and lag gauges of /metrics,
 * and every context's routes.
 */
export async function createRuntime(
  config: Config,
  logger = createLogger(config.LOG_LEVEL),
  options: { clock?: Clock } = {},
): Promise<Runtime> {
  const base = await openRuntimeBase(config, logger, options);
  const {
    ownerPool,
    appPool,
    store,
    vault,
    clock,
    consistency,
    tokenQueries,
    readAuditor,
    tokenCommands,
    detokenizer,
  } = base;
  const redis = createRedis(config.REDIS_URL);
  // One warning when Redis goes away, then a line a minute at most: not one per reconnection attempt.
  const redisOutage = redisOutageLogOf(logger);
  redis.on('error', redisOutage.listener('redis connection'));
  redis.on('ready', () => redisOutage.recovered());
  // Advisory-lock sessions (formula locks): bounded, and apart from the pools their holders use.
  const lockPool = createPool({
    connectionString: config.DATABASE_URL,
    max: 4,
    connectionTimeoutMs: 30_000,
    onIdleClientError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    applicationName: 'tokenvault-locks',
  });
  // The gateway's collaborators, each built once here and handed to whatever uses it.
  const applications = new ApplicationQueries(appPool);
  const reactorQueries = new ReactorQueries(appPool, applications, vault);
  // Reactor runs go through BullMQ: this process queues them; a worker pool (here or elsewhere) runs them.
  const reactorRuns = new CodeRunQueue(config, vault, logger);
  const reactorDefinitions = new ReactorDefinitions(reactorQueries, consistency, {
    ttlMs: config.REACTOR_CACHE_TTL_MS,
  });
  const signInMailQueue = createSignInMailQueue(config, logger);
  const webhookDeliveryQueue = createWebhookDeliveryQueue(config, logger);
  const webhookQueries = new WebhookQueries(appPool);
  const scrapeMetrics = startScrapeMetrics(config, ownerPool, logger);
  const proxies = new ProxyQueries(appPool, vault);
  const allowlist = new AddressAllowlist(
    config.PROXY_ALLOWED_PRIVATE_ADDRESSES,
    'PROXY_ALLOWED_PRIVATE_ADDRESSES',
  );
  const rateLimiter = new RateLimiter(redis, {
    prefix: config.QUEUE_PREFIX,
    defaultPerMinute: config.RATE_LIMIT_PER_MINUTE,
  });
  const authenticate = createCallerAuthenticator({
    apiKeys: createAuthenticator(ownerPool, consistency, { cacheTtlMs: config.API_KEY_CACHE_TTL_MS, clock }),
    sessions: base.sessions,
    publicUrl: config.PUBLIC_URL,
  });
  const proxy = new ProxyGateway({
    config,
    authenticate,
    detokenizer,
    allowlist,
    pipeline: new ProxyPipeline({ runs: reactorRuns, reactors: reactorDefinitions }),
    // /proxy/** is not a JSON route (no route guard): the key's rate limit is taken here.
    admit: (principal, res) => takeRateLimit(rateLimiter, principal, res),
    admitKeyless: (proxy, res) => takeProxyRateLimit(rateLimiter, proxy, res),
    proxyByKey: (key) => proxies.byKey(key),
  });
  const contextDeps: ContextDeps = {
    config,
    logger,
    store,
    appPool,
    ownerPool,
    lockPool,
    vault,
    consistency,
    clock,
    includedMonthlyActiveTokens: config.INCLUDED_MONTHLY_ACTIVE_TOKENS,
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    sessions: base.sessions,
    takeSignInAllowance: signInAllowance(rateLimiter, config),
    enqueueSignInMail: (linkId) => enqueueSignInMail(signInMailQueue, linkId),
    invitationLinks: base.invitationLinks,
    invitationMailLimits: new InvitationMailLimits(redis, {
      perInvitation: config.INVITATION_EMAILS_PER_INVITATION,
      perInvitationWindowMs: config.INVITATION_EMAILS_PER_INVITATION_WINDOW_MS,
      perAddress: config.INVITATION_EMAILS_PER_ADDRESS,
      perAddressWindowMs: config.INVITATION_EMAILS_PER_ADDRESS_WINDOW_MS,
    }),
    applications,
    memberQueries: new MemberQueries(appPool),
    invitationQueries: new InvitationQueries(appPool),
    tokenQueries,
    readAuditor,
    tokenCommands,
    detokenizer,
    reactorQueries,
    formulaQueries: new FormulaQueries(appPool),
    reactorRuns,
    maxReactorInvocationsPerTenant: config.REACTOR_MAX_CONCURRENT_PER_TENANT,
    reactorDefinitions,
    proxies,
    allowlist,
    webhookQueries,
    webhookAllowlist: new AddressAllowlist(
      config.WEBHOOK_ALLOWED_PRIVATE_ADDRESSES,
      'WEBHOOK_ALLOWED_PRIVATE_ADDRESSES',
    ),
    signingKeyOverlapSeconds: config.WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS,
    enqueueWebhookDeliveries: (deliveries) => enqueueDeliveries(webhookDeliveryQueue, deliveries),
    redeliverWebhookDelivery: (tenantId, webhookId, deliveryId) =>
      redeliver(webhookDeliveryQueue, webhookQueries, tenantId, webhookId, deliveryId),
    logSigningKey: logSigningKeyOf(config),
  };
  return {
    ...base,
    redis,
    authenticate,
    routes: contextRoutes(contextDeps),
    reactorRuns,
    proxy,
    rateLimiter,
    async close() {
      proxy.close();
      await reactorRuns.close();
      await signInMailQueue.close();
      await webhookDeliveryQueue.close();
      await scrapeMetrics.close();
      redis.disconnect();
      await lockPool.end();
      await base.close();
    },
  };
}
