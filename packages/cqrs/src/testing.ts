import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { createPool, type Migration, type PoolClient, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import type { EventMetadata, RecordedEvent } from '@tokenvault/eventstore';
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
              expect(check(thrown)).toBe(true);
            },
          };
        },
      };
    },
  };
}

/** Positions of the events recordedEvent makes: increasing in the order they are made. */
let lastPosition = 0;
const noTenant = '00000000-0000-0000-0000-000000000000';

/**
 * An event as the store hands it to a projection. Each one made gets the next position (commit
 * and prepare) and a created_at one millisecond after the previous one's; the tenant is the
 * data's `tenant_id` unless the metadata names one.
 */
export function recordedEvent<Data>(
  type: string,
  data: Data,
  options: {
    metadata?: Partial<EventMetadata>;
    event_id?: string;
    stream?: string;
    revision?: number;
    created_at?: Date;
  } = {},
): RecordedEvent<Data> {
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
