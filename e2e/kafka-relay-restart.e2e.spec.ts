import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '@tokenvault/cqrs';
import { relayCheckpointName } from '@tokenvault/relay';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';
import {
  allEvents,
  collect,
  expectComplete,
  receivedAll,
  testBrokers,
  uniquePrefix,
  waitForTopics,
  waitUntil,
  type Collected,
} from './kafka/support.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

// The relay as its own process (services/relay), killed with SIGKILL in the middle of a stream of
// writes and started again: duplicates are possible, losses are not, and the event id lets the
// consumer drop the duplicates.
describe('relay restarted mid-stream', () => {
  const brokers = testBrokers();
  const prefix = uniquePrefix('restart');
  let stack: TestStack;
  let tenant: TestTenant;
  let received: Collected;
  let relay: ChildProcess | undefined;
  let relayOutput = '';

  const startRelay = () => {
    const child = spawn(process.execPath, ['services/relay/src/main.ts'], {
      cwd: repoRoot,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: stack.database.url,
        MASTER_KEY: stack.config.MASTER_KEY,
        KAFKA_BROKERS: brokers,
        KAFKA_TOPIC_PREFIX: prefix,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => (relayOutput = (relayOutput + chunk.toString('utf8')).slice(-8_000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    relay = child;
  };
  const killRelay = async () => {
    const child = relay;
    relay = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    // No KAFKA_BROKERS: the service itself runs no relay; the relay process below is the only one.
    stack = await startStack();
    tenant = await stack.createTenant();
    startRelay();
    await waitForTopics(brokers, prefix);
    received = await collect(brokers, prefix);
  });
  afterAll(async () => {
    await killRelay();
    await received?.consumer.stop();
    await stack?.stop();
  });

  it('loses nothing and keeps the order per key; the consumer drops the duplicates', async () => {
    const pool = stack.service.runtime.ownerPool;
    // Writers go on until well after the restart: the kill lands in the middle of the stream.
    let written = 0;
    let stopWriting = false;
    const writer = async () => {
      for (let i = 0; !stopWriting; i++) {
        const created = await tenant.client.request<{ id: string }>('POST', '/tokens', {
          body: { data: { n: i } },
        });
        expect(created.status).toBe(201);
        if (i % 3 === 0)
          expect((await tenant.client.request('DELETE', `/tokens/${created.body.id}`)).status).toBe(204);
        written++;
      }
    };
    const writing = Promise.all([writer(), writer(), writer()]);

    // Mid-stream: the relay has published (and checkpointed) 40 events, more are being written.
    const passed = async () => {
      const checkpoint = await new Checkpoint(pool, relayCheckpointName).read();
      const stored = await allEvents(pool);
      const index = stored.findIndex(
        (event) =>
          event.position.commit === checkpoint?.commit && event.position.prepare === checkpoint.prepare,
      );
      return { stored, index };
    };
    await waitUntil('the relay to checkpoint 40 events', async () => (await passed()).index >= 40, 60_000);
    await killRelay();
    const writtenAtKill = written;
    // A crash can also fall between Kafka's acknowledgement and the checkpoint write: emulate that
    // by moving the checkpoint back ten events, which the new relay then sends a second time.
    const { stored, index } = await passed();
    expect(index).toBeGreaterThanOrEqual(40);
    const rewound = stored[index - 10]!.position;
    await pool.query(
      `UPDATE projection_checkpoints SET commit_position = $1::xid8, prepare_position = $2 WHERE name = 'kafka-relay'`,
      [rewound.commit, rewound.prepare],
    );
    startRelay();

    await waitUntil('writes after the restart', () => written >= writtenAtKill + 60, 60_000);
    stopWriting = true;
    await writing;
    const all = await allEvents(pool);
    expect(all.length).toBeGreaterThan(100);
    await waitUntil(
      'every event on Kafka after the restart',
      () => receivedAll(all, received.events),
      120_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nrelay output:\n${relayOutput}`);
    });

    expectComplete(all, received.events, expect);
    const duplicates = received.messages.length - received.events.length;
    expect(duplicates).toBeGreaterThanOrEqual(10);
    expect(new Set(received.events.map((delivery) => delivery.event.id)).size).toBe(received.events.length);
    expect(received.events.length).toBe(all.length);
  });
});
