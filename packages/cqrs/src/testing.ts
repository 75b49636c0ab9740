import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  createLogger,
  createNotificationHub,
  createPool,
  DomainError,
  type Clock,
  type Migration,
  type NotificationHub,
  type PoolClient,
  type Pool,
  type Principal,
} from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase } from '@tokenvault/platform/testing';
import {
  eventStoreMigrations,
  type EventMetadata,
  type EventStore,
  type RecordedEvent,
} from '@tokenvault/eventstore';
import { InMemoryEventStore, type InMemoryEventStoreOptions } from '@tokenvault/eventstore/testing';
import { ReadModelConsistency } from './consistency.ts';
import { fold, type Decider, type DomainEvent } from './decider.ts';
import { projectionHandler, Projector, projectorMigrations, type Projection } from './projector.ts';

/**
 * Given/when/then for deciders, in the manner of emmett's DeciderSpecification:
 * `spec(decider).given([...events]).when(command).then([...events])` or `.thenThrows(check)`.
 */
export function deciderSpec<State, Command, Event extends DomainEvent>(
  decider: Decider<State, Command, Event>,
) {
  return {
    given(history: Event[]) {
      return {
        when(command: Command) {
          const run = () => decider.decide(command, fold(decider, history));
          return {
            then(expected: Event[]) {
              expect(run()).toEqual(expected);
            },
            thenThrows(check: (error: unknown) => boolean) {
              let thrown: unknown;
              try {
                run();
              } catch (error) {
                thrown = error;
              }
              expect(thrown, 'the decider was expected to throw').toBeDefined();
              expect(check(thrown), `the decider threw ${describeThrown(thrown)}`).toBe(true);
            },
          };
        },
      };
    },
  };
}

/** What a decider threw, for the message of a failed `thenThrows`: a DomainError's kind, code and fields. */
function describeThrown(thrown: unknown): string {
  if (!(thrown instanceof DomainError)) return String(thrown);
  const code = thrown.code === undefined ? '' : ` ${thrown.code}`;
  const fields = thrown.fields === undefined ? '' : ` ${JSON.stringify(thrown.fields)}`;
  return `a DomainError (${thrown.kind}${code}: ${thrown.detail})${fields}`;
}

/**
 * A caller of a command handler, as authentication resolves one: by default an application of
 * the tenant holding `permissions` on every container (no container rules).
 */
export function testPrincipal(
  tenantId: string,
  actorId: string,
  permissions: Iterable<string>,
  overrides: Partial<Omit<Principal, 'tenantId' | 'actorId' | 'permissions'>> = {},
): Principal {
  return {
    tenantId,
    actorId,
    actorType: 'application',
    permissions: new Set(permissions),
    rules: [],
    tenantSettings: {},
    ...overrides,
  };
}

/** A clock standing still: commands decided on it carry this time. */
export function fixedClock(iso: string): Clock {
  return { now: () => new Date(iso) };
}

/** What a stream holds, as a command handler's spec compares it: each event's type, data and metadata. */
export async function storedEvents(
  store: Pick<EventStore, 'readStream'>,
  stream: string,
): Promise<{ type: string; data: unknown; metadata: EventMetadata }[]> {
  return (await store.readStream(stream)).map(({ type, data, metadata }) => ({ type, data, metadata }));
}

/**
 * A pool whose every query answers no rows: for what a command handler's spec does not exercise
 * (an advisory lock's session, a look-up that finds nothing).
 */
export function poolAnsweringNoRows(): Pool {
  const client = { query: async () => ({ rows: [], rowCount: 0 }), release: () => {} };
  return { connect: async () => client, query: client.query } as unknown as Pool;
}

/** Positions of the events recordedEvent makes: increasing in the order they are made. */
let lastPosition = 0;
const noTenant = '00000000-0000-0000-0000-000000000000';

/**
 * An event as the store hands it to a projection. Each one made gets the next position (commit
 * and prepare) and a created_at one millisecond after the previous one's; the tenant is the
 * data's `tenant_id` unless the metadata names one. Its type is the literal given, so a typed
 * projection's `apply` takes it as the member of its union with that type.
 */
export function recordedEvent<Type extends string, Data>(
  type: Type,
  data: Data,
  options: {
    metadata?: Partial<EventMetadata>;
    event_id?: string;
    stream?: string;
    revision?: number;
    created_at?: Date;
  } = {},
): RecordedEvent<Data> & { type: Type } {
  const position = ++lastPosition;
  const event_id = options.event_id ?? randomUUID();
  const tenantOfData = (data as { tenant_id?: unknown } | null)?.tenant_id;
  return {
    event_id,
    type,
    data,
    metadata: {
      tenant_id: typeof tenantOfData === 'string' ? tenantOfData : noTenant,
      ...options.metadata,
    },
    stream: options.stream ?? `test.${event_id}`,
    revision: options.revision ?? 0,
    position: { commit: String(position), prepare: String(position) },
    created_at: options.created_at ?? new Date(Date.UTC(2026, 0, 1) + position),
  };
}

/**
 * Given/when/then for projections, in the manner of emmett's projection specifications:
 * `projectionSpec(projection, pool).given([...events]).when([...events]).then(async (tx) => …)`.
 * The history and the new events are each one batch, filtered by the projection's `handles` as the
 * projector does; both are applied, and the assertion reads the rows, in one transaction that is
 * rolled back afterwards, so the specs of a file share its database without seeing each other.
 * `settings` are set for that transaction first (SET LOCAL), e.g. planner settings that make a
 * statement's join order matter.
 */
export function projectionSpec(
  projection: Projection,
  pool: Pool,
  options: { settings?: Record<string, string> } = {},
) {
  const handler = projectionHandler([projection]);
  return {
    given(history: readonly RecordedEvent[]) {
      return {
        when(events: readonly RecordedEvent[]) {
          return {
            async then(check: (tx: PoolClient) => Promise<void>): Promise<void> {
              const tx = await pool.connect();
              try {
                await tx.query('BEGIN');
                for (const [name, value] of Object.entries(options.settings ?? {})) {
                  await tx.query('SELECT set_config($1, $2, true)', [name, value]);
                }
                for (const batch of [history, events]) {
                  if (batch.length) await handler.handle(batch, tx);
                }
                await check(tx);
              } finally {
                // A connection that cannot roll back is not given back to the pool.
                const rolledBack = await tx.query('ROLLBACK').then(
                  () => true,
                  () => false,
                );
                tx.release(!rolledBack);
              }
            },
          };
        },
      };
    },
  };
}

/**
 * A database of its own for a spec file, migrated, and a pool on it, dropped after the file's
 * tests. Read `pool` inside the tests (it is set by then).
 */
export function useTestPool(
  migrations: Migration[],
  options: { max?: number } = {},
): { readonly pool: Pool; readonly database: TestDatabase } {
  const env = {} as { pool: Pool; database: TestDatabase };
  beforeAll(async () => {
    env.database = await createTestDatabase(migrations);
    env.pool = createPool({ connectionString: env.database.url, max: options.max ?? 2 });
  });
  afterAll(async () => {
    await env.pool?.end();
    await env.database?.drop();
  });
  return env;
}

/** What a route spec's commands write to and its queries read from (useReadSide). */
export interface ReadSide {
  /** What the commands append to: the spec's "then" reads the events here. */
  store: InMemoryEventStore;
  /** The tables' owner: the projector's writes, vault keys, advisory locks, look-ups across tenants. */
  ownerPool: Pool;
  /** The service's app role: the queries' reads, under row-level security by tenant. */
  appPool: Pool;
  /** What a write's answer waits on: the projector's checkpoint, announced by NOTIFY. */
  consistency: ReadModelConsistency;
}

/**
 * The read side of a route spec, as PROJECTIONS=async runs it: the commands append to an
 * in-memory store (`store`: its options, such as the context's uniqueness claims), a Projector of
 * `projections` writes their tables from it, and a write's answer waits until it has. The
 * database is the spec file's own: the event store's and projector's tables (tenancy's claims
 * refer to the first), then `migrations`, in the runtime's order. Read the fields inside the tests
 * (they are set by then); everything stops after the file's tests.
 */
export function useReadSide(
  migrations: Migration[],
  projections: readonly Projection[],
  store: InMemoryEventStoreOptions = {},
): Readonly<ReadSide> {
  const side = { store: new InMemoryEventStore(store) } as ReadSide;
  const logger = createLogger('silent');
  let database: TestDatabase | undefined;
  let notifications: NotificationHub | undefined;
  let projector: Projector | undefined;
  beforeAll(async () => {
    database = await createTestDatabase([...eventStoreMigrations, ...projectorMigrations, ...migrations]);
    side.ownerPool = createPool({ connectionString: database.url, max: 4 });
    side.appPool = createPool({ connectionString: database.url, max: 4, role: testAppRole });
    const name = 'read-models';
    projector = new Projector({ name, store: side.store, pool: side.ownerPool, projections, logger });
    notifications = createNotificationHub(database.url);
    side.consistency = new ReadModelConsistency({
      notifications,
      pool: side.ownerPool,
      projectorName: name,
      timeoutMs: 10_000,
      inline: false,
      headPosition: () => side.store.headPosition(),
      pollIntervalMs: 50,
    });
    await side.consistency.start();
    await projector.start();
  });
  afterAll(async () => {
    await projector?.stop();
    await side.consistency?.close();
    await notifications?.close();
    await side.appPool?.end();
    await side.ownerPool?.end();
    await database?.drop();
  });
  return side;
}
