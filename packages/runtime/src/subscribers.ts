import {
  createNotificationHub,
  createPool,
  type Config,
  type Logger,
  type NotificationHub,
  type Pool,
} from '@tokenvault/platform';
import { PostgresEventStore, type EventStore, type RecordedEvent } from '@tokenvault/eventstore';
import { KafkaRelay } from '@tokenvault/relay';
import { SignInMailWorker, startInvitationMail } from '@tokenvault/mail';
import { ReactorRunWorker } from '@tokenvault/reactors';
import { createLogSealer, SealSigner } from '@tokenvault/log-seal';
import type { Processor } from '@tokenvault/cqrs';
import type { Runtime } from './runtime.ts';
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

/** The Kafka relay as configured, or undefined without KAFKA_BROKERS. */
export function relayFor(
  config: Config,
  connection: { store: EventStore; pool: Pool },
  logger: Logger,
): KafkaRelay | undefined {
  if (!config.KAFKA_BROKERS) return undefined;
  return new KafkaRelay({
    store: connection.store,
    pool: connection.pool,
    logger,
    brokers: config.KAFKA_BROKERS,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitions: config.KAFKA_TOPIC_PARTITIONS,
  });
}

/** Invitation e-mails: the enqueuer (event store → BullMQ) and the worker pool (→ SMTP). */
export function startInvitationMailOf(runtime: Runtime) {
  return startInvitationMail({
    config: runtime.config,
    store: runtime.store,
    ownerPool: runtime.ownerPool,
    appPool: runtime.appPool,
    links: runtime.invitationLinks,
    clock: runtime.clock,
    logger: runtime.logger,
  });
}

/** The reactor worker pool: runs from the BullMQ queue, executed in sandbox child processes. */
export function startReactorWorkerOf(runtime: Runtime) {
  return ReactorRunWorker.start({
    config: runtime.config,
    vault: runtime.vault,
    ownerPool: runtime.ownerPool,
    routes: runtime.routes,
    logger: runtime.logger,
  });
}

/** The seals' signer, when LOG_SIGNING_KEY is set. */
export const logSignerOf = (config: Config): SealSigner | undefined =>
  config.LOG_SIGNING_KEY ? new SealSigner(config.LOG_SIGNING_KEY) : undefined;

/** The sealing processor (docs/verifiable-log.md), or undefined with LOG_SEALING=off. */
export function logSealerFor(
  config: Config,
  connection: { store: EventStore; pool: Pool },
  logger: Logger,
): Processor | undefined {
  if (config.LOG_SEALING === 'off') return undefined;
  return createLogSealer({
    store: connection.store,
    pool: connection.pool,
    logger,
    batchSize: config.LOG_SEAL_BATCH_SIZE,
    ...(config.LOG_SIGNING_KEY ? { signer: logSignerOf(config)! } : {}),
  });
}

/** The sign-in e-mail senders (the gateway queues one job per sign-in link). */
export function startSignInMailOf(runtime: Runtime): { stop(): Promise<void> } {
  const worker = new SignInMailWorker({
    config: runtime.config,
    sessions: runtime.sessions,
    logger: runtime.logger,
  });
  worker.start();
  return { stop: () => worker.close() };
}
