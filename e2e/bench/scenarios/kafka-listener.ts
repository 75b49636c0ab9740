// Records when each event reaches a kafkajs consumer of `<prefix>.tokens`. Runs as a child process
// of kafka.ts (forked with an IPC channel) so that the load generator's busy event loop cannot
// delay the receive timestamps. Says 'ready' once its group has joined; on the message 'dump' it
// sends every observation back and exits. Env: KAFKA_BROKERS, KAFKA_TOPIC_PREFIX.
import { Kafka, logLevel } from 'kafkajs';
import type { ListenerReply } from '../support/processes.ts';

export interface KafkaObservation {
  /** The CloudEvents id (the event id). */
  id: string;
  /** Wall-clock receive time, ms since the epoch. */
  receivedAtMs: number;
}

const brokers = process.env.KAFKA_BROKERS;
const prefix = process.env.KAFKA_TOPIC_PREFIX;
if (!brokers || !prefix) throw new Error('KAFKA_BROKERS and KAFKA_TOPIC_PREFIX are required');
if (!process.send) throw new Error('kafka-listener must be started with an IPC channel');
const send = (message: ListenerReply<KafkaObservation>) => process.send?.(message);

const observations: KafkaObservation[] = [];
const kafka = new Kafka({
  clientId: 'bench-kafka-listener',
  brokers: brokers.split(','),
  logLevel: logLevel.ERROR,
});
const consumer = kafka.consumer({ groupId: `bench-${process.pid}`, maxWaitTimeInMs: 50 });
consumer.on(consumer.events.GROUP_JOIN, () => send({ type: 'ready' }));
await consumer.connect();
await consumer.subscribe({ topic: `${prefix}.tokens`, fromBeginning: false });
await consumer.run({
  eachBatch: async ({ batch }) => {
    const receivedAtMs = performance.timeOrigin + performance.now();
    for (const message of batch.messages) {
      const value = message.value?.toString('utf8');
      if (!value) continue;
      const { id } = JSON.parse(value) as { id: string };
      observations.push({ id, receivedAtMs });
    }
  },
});

process.on('message', (message) => {
  if (message !== 'dump') return;
  send({ type: 'observations', observations });
  void consumer.disconnect().finally(() => process.disconnect());
});
process.on('disconnect', () => void consumer.disconnect().finally(() => process.exit(0)));
