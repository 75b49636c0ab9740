import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { createPool } from './db.ts';
import { createLogger } from './logger.ts';
import { createTestDatabase, type TestDatabase } from './testing.ts';

describe('the logger keeps statement data of PostgreSQL errors out of the logs', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  const address = 'invitee.secret@example.com';

  beforeAll(async () => {
    database = await createTestDatabase([]);
    pool = createPool({ connectionString: database.url, max: 2 });
    await pool.query('CREATE TABLE people (email text CONSTRAINT people_email_key UNIQUE, data jsonb)');
    await pool.query('INSERT INTO people (email) VALUES ($1)', [address]);
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  async function logged(failing: () => Promise<unknown>): Promise<{ line: string; error: unknown }> {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = createLogger('info', 'test', sink);
    const error = await failing().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    logger.error({ err: error }, 'request failed');
    logger.error({ err: new Error('appending failed', { cause: error }) }, 'wrapped');
    return { line: lines.join(''), error };
  }

  it('a unique violation (its detail quotes the address): code and constraint only', async () => {
    const { line, error } = await logged(() =>
      pool.query('INSERT INTO people (email) VALUES ($1)', [address]),
    );
    // The error itself does carry the address: the logger is what keeps it out.
    expect(JSON.stringify({ ...(error as object) })).toContain(address);
    expect(line).not.toContain(address);
    expect(line).not.toContain('invitee.secret');
    const [first, second] = line
      .trim()
      .split('\n')
      .map((entry) => JSON.parse(entry) as { err: Record<string, unknown> });
    expect(first!.err).toMatchObject({
      type: 'DatabaseError',
      code: '23505',
      constraint: 'people_email_key',
    });
    expect(first!.err).not.toHaveProperty('detail');
    expect(second!.err).toMatchObject({ message: 'appending failed', cause: { code: '23505' } });
  });

  it('a value PostgreSQL cannot store in JSON (its message and where quote the value)', async () => {
    const { line } = await logged(() =>
      pool.query(`INSERT INTO people (email, data) VALUES ('x', $1::jsonb)`, [
        `{"email": "${address}", "name": "\\u0000"}`,
      ]),
    );
    expect(line).toContain('22P05');
    expect(line).not.toContain(address);
  });
});
