import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokerDir, freePort, startBroker, stopBroker } from '../infra/kafka/kafka.mjs';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import {
  allEvents,
  collect,
  expectComplete,
  receivedAll,
  uniquePrefix,
  waitForRelay,
  waitForTopics,
  waitUntil,
} from './kafka/support.ts';

// A broker of this file's own (it is stopped in the middle of the test, so it must not be the one
// other test files use), stopped while events are written through the API, then started again.
describe('broker down while events are written', () => {
  const prefix = uniquePrefix('down');
  let broker: { port: number; controllerPort: number; dir: string; bootstrap: string };
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    const port = await freePort();
    const controllerPort = await freePort();
    const dir = `${brokerDir(port)}-down`;
    const { bootstrap } = await startBroker({ port, controllerPort, dir, fresh: true, quiet: true });
    broker = { port, controllerPort, dir, bootstrap };
    stack = await startStack({ KAFKA_BROKERS: bootstrap, KAFKA_TOPIC_PREFIX: prefix });
    tenant = await stack.createTenant();
    await waitForTopics(bootstrap, prefix);
  });
  afterAll(async () => {
    await stack?.stop();
    if (broker) await stopBroker({ dir: broker.dir, remove: true });
  });

  it('keeps the API working, and delivers every event in order per key once the broker is back', async () => {
    const pool = stack.service.runtime.ownerPool;
    const api = tenant.client;
    const createTokens = async (count: number) => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const created = await api.request<{ id: string }>('POST', '/tokens', { body: { data: { i } } });
        expect(created.status).toBe(201);
        ids.push(created.body.id);
      }
      return ids;
    };
    const before = await createTokens(5);
    await waitForRelay(pool);

    let downFor = 0;
    try {
      await stopBroker({ dir: broker.dir });
      const downAt = Date.now();
      // Kafka is downstream: writes answer as fast as ever while it is away.
      const started = Date.now();
      const during = await createTokens(20);
      for (const id of [...before, ...during].filter((_, i) => i % 2 === 0))
        expect((await api.request('DELETE', `/tokens/${id}`)).status).toBe(204);
      const application = await api.request<{ id: string }>('POST', '/applications', {
        body: { name: 'During the outage', type: 'private', permissions: ['token:create'] },
      });
      expect(application.status).toBe(201);
      expect(
        (
          await api.request('PUT', `/applications/${application.body.id}`, {
            body: { name: 'Renamed during the outage', permissions: [] },
          })
        ).status,
      ).toBe(200);
      expect(Date.now() - started).toBeLessThan(30_000);
      // Long enough for the relay to fail and retry against the missing broker.
      await waitUntil(
        'the relay to notice the outage',
        () =>
          stack.logs.some(
            (line) => line.includes('event processor failed') && line.includes('"processor":"kafka-relay"'),
          ),
        60_000,
      );
      // Timers may fire a millisecond early: wait until the clock, not the timer, says 10 s.
      while (Date.now() - downAt < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 10_000 - (Date.now() - downAt) + 5));
      }
      downFor = Date.now() - downAt;
    } finally {
      await startBroker({
        port: broker.port,
        controllerPort: broker.controllerPort,
        dir: broker.dir,
        quiet: true,
      });
    }
    expect(downFor).toBeGreaterThanOrEqual(10_000);
    await createTokens(3);

    await waitForRelay(pool, 120_000);
    const stored = await allEvents(pool);
    // A fresh consumer reads every topic from the start.
    const received = await collect(broker.bootstrap, prefix);
    try {
      await waitUntil('every event on Kafka', () => receivedAll(stored, received.events), 90_000);
      expectComplete(stored, received.events, expect);
      expect(received.events.length).toBe(stored.length);
    } finally {
      await received.consumer.stop();
    }
  });
});
