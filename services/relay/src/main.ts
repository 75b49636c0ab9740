// The Kafka relay alone: publishes every event to Kafka as a CloudEvent (public data only), at
// least once, checkpointed in PostgreSQL. Needs KAFKA_BROKERS.
import { ConfigError, createLogger, loadConfig } from '@tokenvault/platform';
import { connectEventStore, prepareDatabase, relayFor, runUntilSignalled } from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault-relay');
  await prepareDatabase(config, logger);
  const connection = await connectEventStore(config, logger, { applicationName: 'tokenvault-relay', max: 2 });
  const relay = relayFor(config, connection, logger);
  if (!relay) throw new ConfigError(['KAFKA_BROKERS: required by the relay']);
  await relay.start();
  return {
    async close() {
      await relay.stop();
      await connection.close();
    },
  };
});
