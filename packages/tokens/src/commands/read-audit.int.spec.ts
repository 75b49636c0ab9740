import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPrincipal } from '@tokenvault/cqrs/testing';
import {
  eventStoreMigrations,
  PostgresEventStore,
  type EventStore,
  type NewEvent,
} from '@tokenvault/eventstore';
import { createPool, systemClock, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { maxTokensPerReadBatch, readsTenantId, type TokenReadRecord } from '../domain/tokens.events.ts';
import { ReadAuditor } from './read-audit.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const reader = testPrincipal(tenant, randomUUID(), ['token:read']);
const otherReader = testPrincipal(otherTenant, randomUUID(), ['token:read'], { actorType: 'user' });

describe('ReadAuditor on the PostgreSQL event store', () => {
  let database: TestDatabase;
  let pool: Pool;
  let store: PostgresEventStore;

  beforeAll(async () => {
    database = await createTestDatabase(eventStoreMigrations);
    pool = createPool({ connectionString: database.url, max: 8 });
    store = new PostgresEventStore(pool);
  });
  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  /** The read records appended since `after` (a global position), by event. */
  const appendedSince = async (after: string) =>
    (
      await pool.query<{ event_type: string; data: { reads: TokenReadRecord[] }; metadata: unknown }>(
        `SELECT event_type, data, metadata FROM es_events WHERE global_position > $1 ORDER BY global_position`,
        [after],
      )
    ).rows;
  const lastPosition = async () =>
    (
      await pool.query<{ last: string }>(
        'SELECT coalesce(max(global_position), 0)::text AS last FROM es_events',
      )
    ).rows[0]!.last;

  /** When the tokens read were created: each read records it, for the monthly active tokens. */
  const createdAt = '2026-01-05T10:00:00.000Z';

  it('records 200 concurrent reads of two tenants as one event (a few at most), each read with its tenant, reader, request and tokens’ creation', async () => {
    const after = await lastPosition();
    const reads = Array.from({ length: 100 }, (_, index) => index);
    const auditor = new ReadAuditor(store, systemClock);
    await Promise.all(
      reads.flatMap((index) => [
        auditor.record(
          reader,
          [{ tokenId: `mine-${index}`, type: 'token', createdAt: new Date(createdAt) }],
          `request-${index}`,
        ),
        auditor.record(
          otherReader,
          [{ tokenId: `theirs-${index}`, type: 'card', createdAt: new Date(createdAt), transform: 'mask' }],
          `other-${index}`,
        ),
      ]),
    );
    const events = await appendedSince(after);
    // Two hundred one-token reads fit two events (128 tokens each at most), of one append.
    expect(events.length).toBe(Math.ceil(200 / maxTokensPerReadBatch));
    for (const event of events) {
      expect(event.event_type).toBe('TokensReadBatch');
      expect(event.metadata).toEqual({ tenant_id: readsTenantId, actor_type: 'system' });
    }
    const recorded = events.flatMap((event) => event.data.reads);
    expect(recorded).toHaveLength(200);
    for (const index of reads) {
      expect(recorded).toContainEqual({
        tenant_id: tenant,
        tokens: [{ token_id: `mine-${index}`, type: 'token', created_at: createdAt }],
        read_by: reader.actorId,
        reader_type: 'application',
        correlation_id: `request-${index}`,
        read_at: expect.any(String),
      });
      expect(recorded).toContainEqual({
        tenant_id: otherTenant,
        tokens: [{ token_id: `theirs-${index}`, type: 'card', created_at: createdAt, transform: 'mask' }],
        read_by: otherReader.actorId,
        reader_type: 'user',
        correlation_id: `other-${index}`,
        read_at: expect.any(String),
      });
    }
  });

  it('splits a read of more than 100 tokens into reads of 100 at most, and events of 128 tokens at most', async () => {
    const after = await lastPosition();
    const auditor = new ReadAuditor(store, systemClock);
    const tokens = Array.from({ length: 250 }, (_, index) => ({
      tokenId: `t-${index}`,
      type: 'token' as const,
      createdAt: new Date(createdAt),
    }));
    await auditor.record(reader, tokens, 'big-request');
    const events = await appendedSince(after);
    expect(events.map((event) => event.data.reads.map((read) => read.tokens.length))).toEqual([
      [100],
      [100],
      [50],
    ]);
    expect(
      events.flatMap((event) =>
        event.data.reads.flatMap((read) => read.tokens.map((token) => token.token_id)),
      ),
    ).toEqual(tokens.map((token) => token.tokenId));
  });

  it('answers each caller only once its read has committed, and fails every caller of a batch whose append fails', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const appended: NewEvent[][] = [];
    const failing: Pick<EventStore, 'append'> = {
      append: async (_stream, events) => {
        appended.push([...events]);
        await held;
        throw new Error('the store is down');
      },
    };
    const auditor = new ReadAuditor(failing as EventStore, systemClock);
    const settled: string[] = [];
    const calls = [reader, otherReader].map((principal) =>
      auditor.record(principal, [{ tokenId: 'x', type: 'token', createdAt: new Date() }], randomUUID()).then(
        () => settled.push('resolved'),
        () => settled.push('rejected'),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(appended).toHaveLength(1);
    expect(settled).toEqual([]);
    release();
    await Promise.all(calls);
    expect(settled).toEqual(['rejected', 'rejected']);
  });
});
