import {
  checkDependencies,
  ConfigError,
  createLogger,
  logDestinationFor,
  type Config,
  type Logger,
  type Pool,
} from '@tokenvault/platform';
import type { EventStore } from '@tokenvault/eventstore';
import { connectEventStore } from '../event-log.ts';
import { prepareDatabase } from '../runtime.ts';
import { relayFor } from '../subscribers.ts';
import type { StartedRole } from './role.ts';

/**
 * The relay role: publishes every event to Kafka as a CloudEvent (public data only), at least
 * once, checkpointed in PostgreSQL. Needs KAFKA_BROKERS. Alone (services/relay) it opens a small
 * event store connection of its own; the all-in-one process gives it its event log.
 */
export async function startRelay(
  config: Config,
  shared?: { eventLog: { store: EventStore; pool: Pool }; logger: Logger },
): Promise<StartedRole> {
  const brokers = config.KAFKA_BROKERS;
  if (!brokers) throw new ConfigError(['KAFKA_BROKERS: required by the relay']);
  const logger =
    shared?.logger ?? createLogger(config.LOG_LEVEL, 'tokenvault-relay', logDestinationFor(config));
  if (!shared) {
    await checkDependencies(config, ['postgres', 'kafka']);
    await prepareDatabase(config, logger);
  }
  // A shared event log stays open at close: the all-in-one process closes it.
  const eventLog = shared
    ? { ...shared.eventLog, close: async () => {} }
    : await connectEventStore(config, logger, { applicationName: 'tokenvault-relay', max: 2 });
  const relay = relayFor(brokers, config, eventLog, logger);
  // Kafka is downstream: the relay connects in the background and never holds up the start.
  await relay.start();
  return {
    async close() {
      await relay.stop();
      await eventLog.close();
    },
  };
}
