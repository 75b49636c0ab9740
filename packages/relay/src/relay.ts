import { Kafka, Partitioners, logLevel, type Admin, type LogEntry, type Producer } from 'kafkajs';
import { eventTopics, toPublicMessage, type EventTopic } from '@tokenvault/contracts';
import type { EventStore, Position, RecordedEvent, Subscription } from '@tokenvault/eventstore';
import type { Logger, Pool } from '@tokenvault/platform';
import { Checkpoint, origin } from '@tokenvault/cqrs';

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
  private readonly name: string;
  private readonly checkpoint: Checkpoint;
  private producer: Producer | null = null;
  private subscription: Subscription | null = null;
  private position: Position = origin;
  private stopped = true;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private starting: Promise<void> | null = null;
  /** Events acknowledged by Kafka since this relay started. */
  published = 0;

  private readonly options: RelayOptions;
  constructor(options: RelayOptions) {
    this.options = options;
    this.name = options.name ?? relayCheckpointName;
    this.checkpoint = new Checkpoint(options.pool, this.name);
    const logger = options.logger.child({ component: 'kafka-relay' });
    this.kafka = new Kafka({
      clientId: options.clientId ?? 'tokenvault-relay',
      brokers: options.brokers.split(',').map((broker) => broker.trim()),
      connectionTimeout: 3_000,
      requestTimeout: 10_000,
      // Each send retries for a few seconds; past that the relay restarts from its checkpoint.
      retry: { initialRetryTime: 200, maxRetryTime: 2_000, retries: 5 },
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ namespace, label, log }: LogEntry) => {
          const { message, ...rest } = log;
          logger.warn({ kafkajs: { namespace, label, ...rest } }, `kafkajs: ${message}`);
        },
    });
  }

  /** Resolves at once: connecting, creating topics and catching up go on in the background. */
  start(): Promise<void> {
    this.stopped = false;
    this.starting = this.run().catch((error: unknown) => this.fail(error));
    return Promise.resolve();
  }

  /** Resolves once the relay is connected and subscribed (for tests and the benchmark). */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.subscription) {
      if (this.stopped) throw new Error('the relay is stopped');
      if (Date.now() > deadline) throw new Error('the relay did not connect to Kafka in time');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.starting;
    await this.subscription?.stop();
    this.subscription = null;
    await this.disconnect();
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    await this.ensureTopics();
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    this.producer = producer;
    if (this.stopped) return this.disconnect();
    this.position = await this.checkpoint.load();
    this.subscription = this.options.store.subscribeAll({
      after: this.position,
      batchSize: this.options.batchSize ?? 500,
      onEvents: (events) => this.publish(events),
      onError: (error) => this.fail(error),
    });
    this.options.logger.info(
      { relay: this.name, after: this.position, topicPrefix: this.options.topicPrefix },
      'kafka relay running',
    );
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

  private async publish(events: RecordedEvent[]): Promise<void> {
    const last = events.at(-1);
    if (!last) return;
    // Never let a batch pass unsent: without a producer the subscription stops and starts again.
    if (!this.producer) throw new Error('the relay has no Kafka producer');
    const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
    for (const event of events) {
      // Throws for an event type without a public contract: it is never published raw, and the
      // relay stops there (retrying) until the contract is added.
      const message = toPublicMessage(event);
      const topic = topicName(this.options.topicPrefix, message.topic);
      const list = byTopic.get(topic) ?? [];
      list.push({
        key: message.key,
        value: JSON.stringify(message.value),
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
      });
      byTopic.set(topic, list);
    }
    await this.producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
    // Acknowledged: only now may the checkpoint move, and only from where this instance left it.
    if (!(await this.checkpoint.move(this.options.pool, this.position, last.position))) {
      throw new Error('the relay checkpoint was moved by another relay instance');
    }
    this.position = last.position;
    this.published += events.length;
    this.failures = 0;
  }

  /** Any failure: drop the connection and the subscription, and start again from the checkpoint. */
  private fail(error: unknown): void {
    if (this.stopped || this.retryTimer) return;
    this.failures++;
    const delay = Math.min(this.options.maxBackoffMs ?? 5_000, 250 * 2 ** Math.min(this.failures, 8));
    this.options.logger.warn(
      { err: error, relay: this.name, retryInMs: delay },
      'kafka relay failed; restarting from its checkpoint',
    );
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.stopped) return;
      this.starting = (async () => {
        await this.subscription?.stop();
        this.subscription = null;
        await this.disconnect();
        await this.run();
      })().catch((restartError: unknown) => this.fail(restartError));
    }, delay);
  }

  private async disconnect(): Promise<void> {
    const producer = this.producer;
    this.producer = null;
    await producer?.disconnect().catch(() => {});
  }
}
