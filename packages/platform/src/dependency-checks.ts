import { connect } from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Config } from './config.ts';

/** What a process role connects to at start; each is named by the variable that points at it. */
export type DependencyName = 'postgres' | 'redis' | 'kafka' | 'smtp';

/**
 * One or more dependencies could not be reached at start: one line each, naming its variable,
 * the address tried (never a password) and the fix. A problem of the environment, not a bug: no stack.
 */
export class DependencyUnavailableError extends Error {
  readonly lines: string[];
  constructor(lines: string[]) {
    super(lines.join('\n'));
    this.lines = lines;
    this.name = 'DependencyUnavailableError';
  }
}

interface Check {
  variable: string;
  /** host:port, as tried (no user, no password). */
  tried: string;
  /** Fatal at start, or only a warning (SMTP: e-mails wait in their queue and are retried). */
  required: boolean;
  fix: string;
  probe(timeoutMs: number): Promise<void>;
}

const hostPortOf = (url: URL, defaultPort: number) =>
  `${url.hostname || '127.0.0.1'}:${url.port || String(defaultPort)}`;

/** Why a connection failed, in a few words: the error code, never the URL it was given. */
function reasonOf(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused, nothing listens there';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    case 'ETIMEDOUT':
    case 'TIMEOUT':
      return 'no answer in time';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    // PostgreSQL's authentication and authorization refusals name the user, never the password.
    case '28P01':
    case '28000':
    case '3D000':
      return message ?? code;
    case undefined:
    default:
      return code ?? message?.split('\n')[0] ?? 'unknown error';
  }
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A TCP connection to host:port, then closed: enough to tell "nothing there" from "something there". */
function tcpProbe(hostPort: string, timeoutMs: number): Promise<void> {
  const separator = hostPort.lastIndexOf(':');
  const host = hostPort.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(hostPort.slice(separator + 1));
  return withTimeout(
    new Promise<void>((resolve, reject) => {
      const socket = connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', (error) => {
        socket.destroy();
        reject(error);
      });
    }),
    timeoutMs,
  );
}

/** Signs in to the server's `postgres` database (the service creates its own when missing). */
async function postgresProbe(databaseUrl: string, timeoutMs: number): Promise<void> {
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
  } finally {
    await client.end().catch(() => {});
  }
}

/** Connects once, without retrying, and PINGs (a password Redis wants is checked too). */
async function redisProbe(redisUrl: string, timeoutMs: number): Promise<void> {
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // connect() rejects with "Connection is closed."; the socket's own error says why.
  let socketError: unknown;
  redis.on('error', (error) => (socketError ??= error));
  try {
    await withTimeout(
      redis.connect().then(() => redis.ping()),
      timeoutMs,
    );
  } catch (error) {
    throw socketError ?? error;
  } finally {
    redis.disconnect();
  }
}

function checksOf(config: Config, needs: readonly DependencyName[]): Check[] {
  const checks: Check[] = [];
  if (needs.includes('postgres')) {
    checks.push({
      variable: 'DATABASE_URL',
      tried: hostPortOf(new URL(config.DATABASE_URL), 5432),
      required: true,
      fix: 'start PostgreSQL there, or set DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DATABASE',
      probe: (timeoutMs) => postgresProbe(config.DATABASE_URL, timeoutMs),
    });
  }
  if (needs.includes('redis')) {
    checks.push({
      variable: 'REDIS_URL',
      tried: hostPortOf(new URL(config.REDIS_URL), 6379),
      required: true,
      fix: 'start Redis there (redis-server), or set REDIS_URL=redis://HOST:6379',
      probe: (timeoutMs) => redisProbe(config.REDIS_URL, timeoutMs),
    });
  }
  if (needs.includes('kafka') && config.KAFKA_BROKERS) {
    const brokers = config.KAFKA_BROKERS.split(',');
    checks.push({
      variable: 'KAFKA_BROKERS',
      tried: brokers.join(','),
      required: true,
      fix: 'start a broker there (npm run kafka:start), set KAFKA_BROKERS=HOST:PORT, or leave it unset for no Kafka',
      // One broker that answers is enough to bootstrap from.
      probe: (timeoutMs) =>
        Promise.any(brokers.map((broker) => tcpProbe(broker, timeoutMs))).then(
          () => undefined,
          (error: AggregateError) => {
            throw error.errors[0] as Error;
          },
        ),
    });
  }
  if (needs.includes('smtp')) {
    const url = new URL(config.SMTP_URL);
    const tried = hostPortOf(url, url.protocol === 'smtps:' ? 465 : 587);
    checks.push({
      variable: 'SMTP_URL',
      tried,
      required: false,
      fix: 'e-mails wait in their queue and are retried; start an SMTP server there (Mailpit listens on 1025), or set SMTP_URL=smtp://USER:PASSWORD@HOST:587',
      probe: (timeoutMs) => tcpProbe(tried, timeoutMs),
    });
  }
  return checks;
}

/**
 * Checks at start, all at once, that what the role needs answers. Each dependency that does not is
 * one line: `VARIABLE: cannot connect to HOST:PORT (reason); fix`. A required one unreachable throws
 * DependencyUnavailableError with every such line (the process then exits without a stack and
 * never says it listens); an optional one is logged as a warning through `warn`.
 */
export async function checkDependencies(
  config: Config,
  needs: readonly DependencyName[],
  options: { timeoutMs?: number; warn?: (line: string) => void } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const outcomes = await Promise.all(
    checksOf(config, needs).map(async (check) => {
      try {
        await check.probe(timeoutMs);
        return undefined;
      } catch (error) {
        return {
          check,
          line: `${check.variable}: cannot connect to ${check.tried} (${reasonOf(error)}); ${check.fix}`,
        };
      }
    }),
  );
  const failed = outcomes.filter((outcome) => outcome !== undefined);
  for (const { line } of failed.filter(({ check }) => !check.required)) options.warn?.(line);
  const fatal = failed.filter(({ check }) => check.required).map(({ line }) => line);
  if (fatal.length) throw new DependencyUnavailableError(fatal);
}
