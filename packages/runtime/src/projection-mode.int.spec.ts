import { describe, expect, it } from 'vitest';
import { useTestPool } from '@tokenvault/cqrs/testing';
import { allMigrations } from './runtime.ts';
import { checkProjectionMode, ProjectionModeMismatch, recordProjectionMode } from './projection-mode.ts';

describe('projection mode of the read models', () => {
  const db = useTestPool(allMigrations);

  it('is recorded by the first start; another mode is refused, naming the rebuild, until a rebuild records it', async () => {
    await checkProjectionMode(db.pool, 'inline');
    await checkProjectionMode(db.pool, 'inline');
    const refused = await checkProjectionMode(db.pool, 'async').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProjectionModeMismatch);
    expect((refused as Error).message).toContain('PROJECTIONS=async npm run rebuild-read-models');
    await recordProjectionMode(db.pool, 'async');
    await checkProjectionMode(db.pool, 'async');
    await expect(checkProjectionMode(db.pool, 'inline')).rejects.toBeInstanceOf(ProjectionModeMismatch);
  });
});
