import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { eventTopics, toPublicMessages } from '@tokenvault/contracts';
import { comparePositions, type RecordedEvent } from '@tokenvault/eventstore';
import { Checkpoint } from '@tokenvault/cqrs';
import { relayCheckpointName } from '@tokenvault/relay';
import type { Pool } from '@tokenvault/platform';
import { consumeEvents, type Delivery, type EventConsumer } from './consumer-example.ts';

/** The test run's broker (started by e2e/kafka/global-setup.ts). */
export const testBrokers = () => inject('kafkaBrokers');

/** A topic prefix no other test file or run uses: never reads old messages. */
export const uniquePrefix = (name: string) => `e2e-${name}-${randomBytes(4).toString('hex')}`;

export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function waitForTopics(brokers: string, prefix: string, timeoutMs = 60_000): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await waitUntil(
      `topics ${prefix}.*`,
      async () => {
        const topics = new Set(await admin.listTopics());
        return eventTopics.every((topic) => topics.has(`${prefix}.${topic}`));
      },
      timeoutMs,
    );
  } finally {
    await admin.disconnect();
  }
}

export async function partitionCounts(brokers: string, prefix: string): Promise<number[]> {
  const admin = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({
      topics: eventTopics.map((topic) => `${prefix}.${topic}`),
    });
    return topics.map((topic) => topic.partitions.length);
  } finally {
    await admin.disconnect();
  }
}

/** Everything a consumer received: every message (duplicates too) and each event once. */
export interface Collected {
  messages: Delivery[];
  events: Delivery[];
  consumer: EventConsumer;
}

export async function collect(brokers: string, prefix: string): Promise<Collected> {
  const messages: Delivery[] = [];
  const events: Delivery[] = [];
  const consumer = await consumeEvents({
    brokers,
    topicPrefix: prefix,
    groupId: `${prefix}-${randomBytes(4).toString('hex')}`,
    logLevel: logLevel.NOTHING,
    onMessage: (delivery) => messages.push(delivery),
    onEvent: (delivery) => void events.push(delivery),
  });
  return { messages, events, consumer };
}

/** Every event in the store, in commit order. */
export async function allEvents(pool: Pool): Promise<RecordedEvent[]> {
  const result = await pool.query<{
    event_id: string;
    event_type: string;
    stream_id: string;
    stream_revision: string;
    data: unknown;
    metadata: RecordedEvent['metadata'];
    created_at: Date;
    commit: string;
    prepare: string;
  }>(
    `SELECT event_id, event_type, stream_id, stream_revision, data, metadata, created_at,
            transaction_id::text AS commit, global_position::text AS prepare
     FROM es_events ORDER BY transaction_id, global_position`,
  );
  return result.rows.map((row) => ({
    event_id: row.event_id,
    type: row.event_type,
    stream: row.stream_id,
    revision: Number(row.stream_revision),
    data: row.data,
    metadata: row.metadata,
    created_at: row.created_at,
    position: { commit: row.commit, prepare: row.prepare },
  }));
}

/** Waits until the relay's checkpoint has passed every event written so far. */
export async function waitForRelay(pool: Pool, timeoutMs = 90_000): Promise<void> {
  const events = await allEvents(pool);
  const last = events.at(-1);
  if (!last) return;
  await waitUntil(
    'the relay to catch up',
    async () => {
      const checkpoint = await new Checkpoint(pool, relayCheckpointName).read();
      return checkpoint !== undefined && comparePositions(checkpoint, last.position) >= 0;
    },
    timeoutMs,
  );
}

/**
 * Asserts that every stored event's messages arrived (none lost) and that, per topic and key, the
 * first arrival of each message id is in the order the events were written. (One entity's events on two
 * topics, such as a token's changes and its reads, have no order between the topics.)
 */
export function expectComplete(
  stored: RecordedEvent[],
  received: Delivery[],
  expect: (actual: unknown, message?: string) => { toEqual(expected: unknown): void },
): void {
  const expectedByKey = new Map<string, string[]>();
  for (const { topic, key, value } of stored.flatMap((event) => toPublicMessages(event))) {
    const topicKey = `${topic} ${key}`;
    expectedByKey.set(topicKey, [...(expectedByKey.get(topicKey) ?? []), value.id]);
  }
  const receivedByKey = new Map<string, string[]>();
  for (const delivery of received) {
    const topicKey = `${delivery.topic.slice(delivery.topic.lastIndexOf('.') + 1)} ${delivery.key}`;
    const list = receivedByKey.get(topicKey) ?? [];
    if (!list.includes(delivery.event.id)) list.push(delivery.event.id);
    receivedByKey.set(topicKey, list);
  }
  expect(Object.fromEntries(receivedByKey), 'event ids per topic and key, in arrival order').toEqual(
    Object.fromEntries(expectedByKey),
  );
}

/** True once every stored event's messages have been received (by their CloudEvents ids). */
export function receivedAll(stored: RecordedEvent[], received: Delivery[]): boolean {
  const ids = new Set(received.map((delivery) => delivery.event.id));
  return stored.every((event) => toPublicMessages(event).every((message) => ids.has(message.value.id)));
}
