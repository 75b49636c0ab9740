import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '@tokenvault/platform';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreMigrations, PostgresEventStore } from '@tokenvault/eventstore';
import { vaultMigrations } from '@tokenvault/vault';
import { streams } from '../domain/events.ts';
import { tenantKeyShredding } from './key-shredding.ts';

describe('tenant key shredding', () => {
  let database: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    database = await createTestDatabase([...eventStoreMigrations, ...vaultMigrations]);
    pool = createPool({ connectionString: database.url, max: 2 });
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('destroys a deleted tenant’s keys in the append’s own transaction, and no other tenant’s', async () => {
    const [deleted, kept] = [randomUUID(), randomUUID()];
    for (const tenantId of [deleted, kept]) {
      await pool.query(
        `INSERT INTO tenant_keys (tenant_id, wrapped_data_key, wrapped_fingerprint_key) VALUES ($1, 'w', 'w')`,
        [tenantId],
      );
    }
    // No projector anywhere: the append itself shreds the keys.
    const store = new PostgresEventStore(pool, { inlineProjections: [tenantKeyShredding] });
    await store.append(
      streams.tenant(deleted),
      [
        {
          type: 'TenantDeleted',
          data: { tenant_id: deleted, deleted_by: randomUUID(), deleted_at: new Date().toISOString() },
          metadata: { tenant_id: deleted },
        },
      ],
      { expectedRevision: 'any' },
    );
    const keys = await pool.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_keys');
    expect(keys.rows).toEqual([{ tenant_id: kept }]);
    await store.close();
  });
});
