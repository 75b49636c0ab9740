import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  createPool,
  DomainError,
  type Clock,
  type Migration,
  type PoolClient,
  type Pool,
  type Principal,
} from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import type { EventMetadata, EventStore, RecordedEvent } from '@tokenvault/eventstore';
import { fold, type Decider, type DomainEvent } from './decider.ts';
import { projectionHandler, type Projection } from './projector.ts';

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
