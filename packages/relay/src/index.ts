export { KafkaRelay, readRelayCheckpoint, relayMigrations, topicName, type RelayOptions } from './relay.ts';
