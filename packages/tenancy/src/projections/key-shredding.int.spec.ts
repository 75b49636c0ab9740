import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestPool } from '@tokenvault/cqrs/testing';
import { eventStoreMigrations, PostgresEventStore } from '@tokenvault/eventstore';
import { vaultMigrations } from '@tokenvault/vault';
import { streams } from '../domain/tenancy.events.ts';
import { tenantKeyShredding } from './key-shredding.ts';

describe('tenant key shredding', () => {
  const db = useTestPool([...eventStoreMigrations, ...vaultMigrations]);

  it('destroys a deleted tenant’s keys in the append’s own transaction, and no other tenant’s', async () => {
    const [deleted, kept] = [randomUUID(), randomUUID()];
    for (const tenantId of [deleted, kept]) {
      await db.pool.query(
        `INSERT INTO tenant_keys (tenant_id, wrapped_data_key, wrapped_fingerprint_key) VALUES ($1, 'w', 'w')`,
        [tenantId],
      );
    }
    // No projector anywhere: the append itself shreds the keys.
    const store = new PostgresEventStore(db.pool, { inlineProjections: [tenantKeyShredding] });
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
    const keys = await db.pool.query<{ tenant_id: string }>('SELECT tenant_id FROM tenant_keys');
    expect(keys.rows).toEqual([{ tenant_id: kept }]);
    await store.close();
  });
});
