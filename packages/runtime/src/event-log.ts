import {
  createNotificationHub,
  createPool,
  type Config,
  type Logger,
  type NotificationHub,
  type Pool,
} from '@tokenvault/platform';
import { PostgresEventStore, type EventStore, type RecordedEvent } from '@tokenvault/eventstore';
import { inlineProjections, uniquenessOf, writeSideProjections } from './projections.ts';
import { connectExternalEventStore } from './external-store.ts';

/**
 * An owner-role pool, the process's LISTEN connection, and an event store on them: what every
 * writer and subscriber of the event log needs. With PROJECTIONS=inline, every append writes the
 * consistent read models in its own transaction, whichever process makes it.
 */
export async function connectEventStore(
  config: Config,
  logger: Logger,
  options: {
    applicationName: string;
    max: number;
    settings?: Record<string, string>;
    onCommitted?: (events: readonly RecordedEvent[]) => void;
  },
): Promise<{ pool: Pool; notifications: NotificationHub; store: EventStore; close(): Promise<void> }> {
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    max: options.max,
    applicationName: options.applicationName,
    ...(options.settings ? { settings: options.settings } : {}),
    onIdleClientError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
  });
  const notifications = createNotificationHub(config.DATABASE_URL, (error) =>
    logger.warn({ err: error }, 'notification connection failed; reconnecting'),
  );
  if (config.EVENTSTORE_URL) {
    // Events in KurrentDB (projections are async: loadConfig sees to it).
    const external = await connectExternalEventStore(
      config.EVENTSTORE_URL,
      pool,
      logger,
      options.onCommitted,
    );
    return {
      pool,
      notifications,
      store: external,
      async close() {
        await external.close();
        await notifications.close();
        await pool.end();
      },
    };
  }
  const store = new PostgresEventStore(pool, {
    notifications,
    inlineProjections: [...writeSideProjections, ...inlineProjections(config)],
    uniqueness: uniquenessOf,
    ...(options.onCommitted ? { onCommitted: options.onCommitted } : {}),
    onBackgroundError: (error) => logger.warn({ err: error }, 'event store background error'),
    ...(config.APPEND_GROUP_COMMIT_MS > 0
      ? {
          groupCommit: {
            windowMs: config.APPEND_GROUP_COMMIT_MS,
            maxAppends: config.APPEND_GROUP_COMMIT_MAX,
          },
        }
      : {}),
  });
  return {
    pool,
    notifications,
    store,
    async close() {
      await store.close();
      await notifications.close();
      await pool.end();
    },
  };
}
