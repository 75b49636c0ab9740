import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreMigrations } from '../index.ts';
import { readAllSql } from './read.ts';

let database: TestDatabase;
let client: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase(eventStoreMigrations);
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
  // A log the size of a busy hour, without statistics (as right after a bulk load).
  await client.query(
    `INSERT INTO es_streams (stream_id, revision, transaction_id) SELECT 'read-spec-' || n, 0, pg_current_xact_id() FROM generate_series(1, 20000) n;
     INSERT INTO es_events (stream_id, stream_revision, event_id, event_type, data, metadata)
     SELECT 'read-spec-' || n, 0, gen_random_uuid(), 'Happened', '{}', '{}' FROM generate_series(1, 20000) n`,
  );
});

afterAll(async () => {
  await client?.end();
  await database?.drop();
});

/** The plan a subscriber's poll runs once PostgreSQL has switched to the generic plan. */
async function genericPlanOfReadAll(): Promise<string> {
  await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(`PREPARE read_all_spec(xid8, bigint, text[], int) AS ${readAllSql}`);
  try {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN EXECUTE read_all_spec('0', 0, NULL, 100)`,
    );
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('DEALLOCATE read_all_spec');
    await client.query('RESET plan_cache_mode');
  }
}

describe('reading the log in commit order', () => {
  it('polls with index scans only, so a poll costs the same at any size of the log', async () => {
    const plan = await genericPlanOfReadAll();
    expect(plan).toContain('es_events_commit_order');
    expect(plan).not.toMatch(/Seq Scan on es_events/);
  });
});
