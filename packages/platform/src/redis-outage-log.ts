import type { Logger } from './logger.ts';

/** How often, at most, a Redis outage is logged again while it lasts. */
export const redisOutageLogIntervalMs = 60_000;

/**
 * ioredis and BullMQ emit an `error` per reconnection attempt (several a second) while Redis is
 * unreachable: one warning naming REDIS_URL, then at most one line a minute (with how many errors
 * it stands for), then one line when Redis is back. Never the URL itself: it may hold a password.
 */
export class RedisOutageLog {
  private outageSince: number | undefined;
  private lastLoggedAt = 0;
  private unlogged = 0;

  private readonly logger: Logger;
  private readonly now: () => number;

  constructor(logger: Logger, now: () => number = Date.now) {
    this.logger = logger;
    this.now = now;
  }

  /** The `error` listener of a Redis connection, a queue or a worker; `source` names which. */
  listener(source: string): (error: Error) => void {
    return (error) => this.error(source, error);
  }

  error(source: string, error: Error): void {
    const now = this.now();
    if (this.outageSince === undefined) {
      this.outageSince = now;
      this.lastLoggedAt = now;
      this.unlogged = 0;
      this.logger.warn(
        { err: error, source },
        'Redis unreachable (REDIS_URL): retrying; further errors are logged at most once a minute',
      );
      return;
    }
    if (now - this.lastLoggedAt < redisOutageLogIntervalMs) {
      this.unlogged++;
      return;
    }
    this.logger.warn(
      { err: error, source, errors_since_last_line: this.unlogged + 1, outage_ms: now - this.outageSince },
      'Redis still unreachable (REDIS_URL)',
    );
    this.lastLoggedAt = now;
    this.unlogged = 0;
  }

  /** A connection is ready again: ends the outage (logged if one was). */
  recovered(): void {
    if (this.outageSince === undefined) return;
    this.logger.info(
      { outage_ms: this.now() - this.outageSince, errors_unlogged: this.unlogged },
      'Redis reachable again (REDIS_URL)',
    );
    this.outageSince = undefined;
    this.unlogged = 0;
  }
}

const outageLogs = new WeakMap<Logger, RedisOutageLog>();

/**
 * The process's one outage log of `logger`: every Redis connection that logs there (the runtime's
 * client, each queue's and worker's) counts towards the same outage, told once.
 */
export function redisOutageLogOf(logger: Logger): RedisOutageLog {
  let log = outageLogs.get(logger);
  if (!log) {
    log = new RedisOutageLog(logger);
    outageLogs.set(logger, log);
  }
  return log;
}
