import { Kafka, Partitioners, logLevel, type Admin, type LogEntry, type Producer } from 'kafkajs';
import { eventTopics, toPublicMessages, type EventTopic } from '@tokenvault/contracts';
import type { EventStore, RecordedEvent } from '@tokenvault/eventstore';
import type { Logger, Pool } from '@tokenvault/platform';
import { EventProcessor } from '@tokenvault/cqrs';

export interface RelayOptions {
  store: EventStore;
  /** An owner-role pool: the checkpoint table. */
  pool: Pool;
  logger: Logger;
  /** Comma-separated host:port list. */
  brokers: string;
  topicPrefix: string;
  /** Partitions of each topic when the relay creates it (an existing topic is left as it is). */
  partitions: number;
  /** The checkpoint's name: one per relay deployment. */
  name?: string;
  batchSize?: number;
  clientId?: string;
  /** Longest wait between two attempts after a failure. */
  maxBackoffMs?: number;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}

/** The checkpoint row of the default relay deployment. */
export const relayCheckpointName = 'kafka-relay';

export const topicName = (prefix: string, topic: EventTopic) => `${prefix}.${topic}`;

/**
 * Publishes every event to Kafka, at least once, in commit order: a batch is sent (acks from all
 * in-sync replicas, idempotent producer) and only then is the checkpoint moved past it. When a send
 * fails the checkpoint stays where it was, and the relay starts again from it after a backoff, so a
 * broker outage delays events but never loses one (a batch sent in part is sent again: consumers
 * drop duplicates by the CloudEvents `id`). Kafka is downstream: the API never waits for it.
 */
export class KafkaRelay {
  private readonly kafka: Kafka;
  private readonly processor: EventProcessor;
  private producer: Producer | null = null;
  /** Events acknowledged by Kafka since this relay started. */
  published = 0;

  private readonly options: RelayOptions;
  constructor(options: RelayOptions) {
    this.options = options;
    const logger = options.logger.child({ component: 'kafka-relay' });
    this.kafka = new Kafka({
      clientId: options.clientId ?? 'tokenvault-relay',
      brokers: options.brokers.split(',').map((broker) => broker.trim()),
      connectionTimeout: 3_000,
      requestTimeout: 10_000,
      retry: { initialRetryTime: 200, maxRetryTime: 2_000, retries: 5 },
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ namespace, label, log }: LogEntry) => {
          const { message, ...rest } = log;
          logger.warn({ kafkajs: { namespace, label, ...rest } }, `kafkajs: ${message}`);
        },
    });
    const name = options.name ?? relayCheckpointName;
    this.processor = new EventProcessor({
      name,
      store: options.store,
      pool: options.pool,
      logger: options.logger,
      batchSize: options.batchSize ?? 500,
      ...(options.maxBackoffMs ? { maxBackoffMs: options.maxBackoffMs } : {}),
      leaseMs: options.leaseMs,
      handler: {
        open: async () => {
          await this.connect();
          logger.info({ relay: name, topicPrefix: options.topicPrefix }, 'kafka relay running');
        },
        close: () => this.disconnect(),
        handle: (events) => this.publish(events),
      },
    });
  }

  /** Resolves at once: connecting, creating topics and catching up go on in the background. */
  start(): Promise<void> {
    return this.processor.start();
  }

  /** Resolves once the relay is connected and subscribed (for tests and the benchmark). */
  ready(timeoutMs = 60_000): Promise<void> {
    return this.processor.ready(timeoutMs);
  }

  async stop(): Promise<void> {
    await this.processor.stop();
  }

  private async connect(): Promise<void> {
    await this.ensureTopics();
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    this.producer = producer;
  }

  private async ensureTopics(): Promise<void> {
    const admin: Admin = this.kafka.admin();
    await admin.connect();
    try {
      const existing = new Set(await admin.listTopics());
      const missing = eventTopics
        .map((topic) => topicName(this.options.topicPrefix, topic))
        .filter((topic) => !existing.has(topic));
      if (missing.length)
        await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({ topic, numPartitions: this.options.partitions })),
        });
    } finally {
      await admin.disconnect();
    }
  }

  /** Sent and acknowledged before it returns: only then does the processor move the checkpoint. */
  private async publish(events: readonly RecordedEvent[]): Promise<void> {
    if (!this.producer) throw new Error('the relay has no Kafka producer');
    const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
    for (const event of events) {
      // Throws for an event type without a public contract: it is never published raw, and the
      // relay stops there (retrying) until the contract is added. A batch of several tenants'
      // reads is a message per read, each of its own tenant.
      for (const message of toPublicMessages(event)) {
        const topic = topicName(this.options.topicPrefix, message.topic);
        const list = byTopic.get(topic) ?? [];
        list.push({
          key: message.key,
          value: JSON.stringify(message.value),
          headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
        });
        byTopic.set(topic, list);
      }
    }
    await this.producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
    this.published += events.length;
  }

  private async disconnect(): Promise<void> {
    const producer = this.producer;
    this.producer = null;
    await producer?.disconnect().catch(() => {});
  }
}
