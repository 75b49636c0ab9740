export { KafkaRelay, relayCheckpointName, topicName, type RelayOptions } from './relay.ts';
