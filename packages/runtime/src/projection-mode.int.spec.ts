import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from './runtime.ts';
import { checkProjectionMode, ProjectionModeMismatch, recordProjectionMode } from './projection-mode.ts';

describe('projection mode of the read models', () => {
  let database: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    pool = createPool({ connectionString: database.url, max: 2 });
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('is recorded by the first start; another mode is refused, naming the rebuild, until a rebuild records it', async () => {
    await checkProjectionMode(pool, 'inline');
    await checkProjectionMode(pool, 'inline');
    const refused = await checkProjectionMode(pool, 'async').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProjectionModeMismatch);
    expect((refused as Error).message).toContain('PROJECTIONS=async npm run rebuild-read-models');
    await recordProjectionMode(pool, 'async');
    await checkProjectionMode(pool, 'async');
    await expect(checkProjectionMode(pool, 'inline')).rejects.toBeInstanceOf(ProjectionModeMismatch);
  });
});
