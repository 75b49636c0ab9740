// An example consumer of Tokenvault's Kafka events (kafkajs), also used by the e2e tests.
//
//   KAFKA_BROKERS=127.0.0.1:19092 KAFKA_TOPIC_PREFIX=tokenvault npm run node -- e2e/kafka/consumer-example.ts
//
// Delivery is at least once: after a broker outage or a relay restart an event may come again.
// Every message is a CloudEvents 1.0 JSON envelope whose `id` is the event id, the same on every
// redelivery, so the consumer drops an id it has already handled. This example remembers ids in
// memory; a real consumer stores them with the effect (e.g. in the same database transaction).
import { pathToFileURL } from 'node:url';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { cloudEventSchema, eventTopics, type CloudEvent } from '@tokenvault/contracts';

export interface Delivery {
  topic: string;
  partition: number;
  offset: string;
  key: string;
  event: CloudEvent;
  /** The raw message, for checks that nothing sensitive is in it. */
  raw: string;
}

/** Remembers the last `capacity` event ids it has seen. */
export class Deduplicator {
  private readonly seen = new Set<string>();
  private readonly capacity: number;
  constructor(capacity = 100_000) {
    this.capacity = capacity;
  }

  /** True the first time an id is offered, false for a duplicate. */
  firstTime(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > this.capacity) this.seen.delete(this.seen.values().next().value as string);
    return true;
  }
}

export interface EventConsumer {
  consumer: Consumer;
  stop(): Promise<void>;
}

export async function consumeEvents(options: {
  brokers: string;
  topicPrefix: string;
  groupId: string;
  /** Each event once (duplicates dropped), in order per key. */
  onEvent(delivery: Delivery): Promise<void> | void;
  /** Every message as it arrives, duplicates included. */
  onMessage?(delivery: Delivery): void;
  fromBeginning?: boolean;
  logLevel?: logLevel;
}): Promise<EventConsumer> {
  const kafka = new Kafka({
    clientId: 'tokenvault-example-consumer',
    brokers: options.brokers.split(','),
    logLevel: options.logLevel ?? logLevel.WARN,
  });
  const consumer = kafka.consumer({ groupId: options.groupId });
  const deduplicator = new Deduplicator();
  await consumer.connect();
  await consumer.subscribe({
    topics: eventTopics.map((topic) => `${options.topicPrefix}.${topic}`),
    fromBeginning: options.fromBeginning ?? true,
  });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const raw = message.value?.toString('utf8') ?? '';
      const delivery: Delivery = {
        topic,
        partition,
        offset: message.offset,
        key: message.key?.toString('utf8') ?? '',
        event: cloudEventSchema.parse(JSON.parse(raw)),
        raw,
      };
      options.onMessage?.(delivery);
      if (deduplicator.firstTime(delivery.event.id)) await options.onEvent(delivery);
    },
  });
  return { consumer, stop: () => consumer.disconnect() };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:19092';
  const topicPrefix = process.env.KAFKA_TOPIC_PREFIX ?? 'tokenvault';
  const running = await consumeEvents({
    brokers,
    topicPrefix,
    groupId: process.env.KAFKA_GROUP_ID ?? 'tokenvault-example',
    onEvent: ({ topic, key, event }) => {
      console.log(JSON.stringify({ topic, key, type: event.type, id: event.id, data: event.data }));
    },
  });
  console.error(`consuming ${topicPrefix}.* from ${brokers}; Ctrl-C to stop`);
  const stop = () => void running.stop().finally(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
