// The relay role alone: publishes every event to Kafka as a CloudEvent (public data only), at
// least once, checkpointed in PostgreSQL. Needs KAFKA_BROKERS.
import { loadConfig } from '@tokenvault/platform';
import { runUntilSignalled, startRelay } from '@tokenvault/runtime';

await runUntilSignalled(() => startRelay(loadConfig()));
