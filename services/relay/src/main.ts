// The Kafka relay alone: publishes every event to Kafka as a CloudEvent (public data only), at
// least once, checkpointed in PostgreSQL. Needs KAFKA_BROKERS.
import { PostgresEventStore } from '@tokenvault/eventstore';
import { ConfigError, createLogger, createPool, loadConfig } from '@tokenvault/platform';
import { KafkaRelay } from '@tokenvault/relay';
import { prepareDatabase, runUntilSignalled } from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  if (!config.KAFKA_BROKERS) throw new ConfigError(['KAFKA_BROKERS: required by the relay']);
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault-relay');
  await prepareDatabase(config, logger);
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    max: 2,
    applicationName: 'tokenvault-relay',
    onIdleClientError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
  });
  const store = new PostgresEventStore(pool, {
    listenConnectionString: config.DATABASE_URL,
    onBackgroundError: (error) => logger.warn({ err: error }, 'event store background error'),
  });
  const relay = new KafkaRelay({
    store,
    pool,
    logger,
    brokers: config.KAFKA_BROKERS,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitions: config.KAFKA_TOPIC_PARTITIONS,
  });
  await relay.start();
  return {
    async close() {
      await relay.stop();
      await store.close();
      await pool.end();
    },
  };
});
