import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreContract, uniquenessContract } from './contract.ts';
import { eventStoreMigrations, ExternalEventStore } from './index.ts';
import { KurrentDBEventStore } from './kurrentdb/kurrentdb-event-store.ts';
import { findKurrentDBServer } from './kurrentdb/server.ts';
import { appendAndKill } from './testing/crash.ts';
import { contractUniquenessRules, invited } from './testing/claims-fixture.ts';

/*
 * The contract suites against a real KurrentDB: at EVENTSTORE_URL, or in a container of a
 * KurrentDB image the local Docker engine has. The one suite allowed not to run where neither
 * exists (no image can be fetched on the CI machines): it says so in one plain line.
 */
const server = findKurrentDBServer();

if (server.kind === 'none') {
  console.log(`KurrentDB contract suite NOT RUN: ${server.reason}.`);
  describe('KurrentDB adapter against a real server', () => {
    it.skip(`not run: ${server.reason}`, () => {});
  });
} else {
  let url: string;
  let stopContainer: (() => Promise<unknown>) | undefined;
  let claimsDatabase: TestDatabase;
  let claimsPool: pg.Pool;

  beforeAll(async () => {
    if (server.kind === 'url') {
      url = server.url;
    } else {
      const { KurrentDbContainer } = await import('@testcontainers/kurrentdb');
      // The EventStoreDB image reads EVENTSTORE_* where KurrentDB reads KURRENTDB_*.
      const container = await new KurrentDbContainer(server.image)
        .withEnvironment({ EVENTSTORE_CLUSTER_SIZE: '1', EVENTSTORE_INSECURE: 'true' })
        .start();
      url = container.getConnectionString();
      stopContainer = () => container.stop();
    }
    console.log(
      `KurrentDB contract suite runs against ${server.kind === 'url' ? 'EVENTSTORE_URL' : server.image}`,
    );
    claimsDatabase = await createTestDatabase(eventStoreMigrations);
    claimsPool = createPool({ connectionString: claimsDatabase.url, max: 30, role: testAppRole });
  }, 180_000);

  afterAll(async () => {
    await claimsPool?.end();
    await claimsDatabase?.drop();
    await stopContainer?.();
  });

  const kurrentdb = () => KurrentDBEventStore.fromConnectionString(url);

  eventStoreContract('kurrentdb', {
    async createStore() {
      return kurrentdb();
    },
    async cleanup() {},
  });

  let uniquenessStore: ExternalEventStore;
  uniquenessContract('external composition over KurrentDB', {
    async createStore() {
      uniquenessStore = new ExternalEventStore({
        events: kurrentdb(),
        pool: claimsPool,
        uniqueness: contractUniquenessRules,
      });
      return uniquenessStore;
    },
    async cleanup() {},
    crash: {
      appendAndKill: (stage, stream, events) =>
        appendAndKill(stage, stream, events, {
          CLAIMS_DATABASE_URL: claimsDatabase.url,
          EVENTSTORE_URL: url,
        }),
      async repairNow() {
        await uniquenessStore.repairStale(0);
      },
    },
  });

  describe('KurrentDBEventStore', () => {
    it('keeps event ids: a retried append with the same ids stores nothing twice', async () => {
      const store = kurrentdb();
      const stream = `idempotent-${crypto.randomUUID()}`;
      const events = [{ ...invited('i', 'i@example.com'), event_id: crypto.randomUUID() }];
      const first = await store.append(stream, events, { expectedRevision: 'no_stream' });
      const again = await store.append(stream, events, { expectedRevision: 'no_stream' });
      expect(again.revision).toBe(first.revision);
      expect(await store.readStream(stream)).toHaveLength(1);
      await store.close();
    });

    it('gives positions as decimal strings and leaves the server’s own events out of $all', async () => {
      const store = kurrentdb();
      const stream = `positions-${crypto.randomUUID()}`;
      const { position } = await store.append(stream, [invited('p', 'p@example.com')], {
        expectedRevision: 'no_stream',
      });
      expect(position.commit).toMatch(/^\d+$/);
      expect(position.prepare).toMatch(/^\d+$/);
      const all = await store.readAll({ limit: 1_000 });
      expect(all.some((event) => event.type.startsWith('$') || event.stream.startsWith('$'))).toBe(false);
      const head = await store.headPosition();
      expect(head).toBeDefined();
      await store.close();
    });
  });
}
