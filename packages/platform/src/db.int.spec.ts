import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from './db.ts';
import { createTestDatabase, type TestDatabase } from './testing.ts';

describe('createPool applies session settings at connection start-up', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase([]);
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('sets named and numeric settings on every connection of the pool', async () => {
    const pool = createPool({
      connectionString: database.url,
      max: 2,
      settings: { synchronous_commit: 'off', random_page_cost: 1.1 },
    });
    try {
      const clients = await Promise.all([pool.connect(), pool.connect()]);
      for (const client of clients) {
        const { rows } = await client.query<{ commit: string; cost: string }>(
          "SELECT current_setting('synchronous_commit') AS commit, current_setting('random_page_cost') AS cost",
        );
        expect(rows[0]).toEqual({ commit: 'off', cost: '1.1' });
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it('refuses a setting that is neither a finite number nor a plain identifier', () => {
    const refused: Record<string, string | number>[] = [
      { random_page_cost: Number.NaN },
      { search_path: 'public -c role=postgres' },
      { 'bad-name': 'on' },
    ];
    for (const settings of refused) {
      expect(() => createPool({ connectionString: database.url, max: 1, settings })).toThrow(
        /must be a finite number or a plain lower-case identifier/,
      );
    }
  });
});
