// A database as a deployment before keys had ids left it (the tenancy migrations up to
// 006): an application and its one key digest. Then the migrations of today: the key keeps
// working under a stable id, its application's (firstKeyIdOf).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectorMigrations } from '@tokenvault/cqrs';
import { eventStoreMigrations } from '@tokenvault/eventstore';
import { createPool, migrate, type Pool } from '@tokenvault/platform';
import { createTestDatabase, testAppRole, type TestDatabase } from '@tokenvault/platform/testing';
import { firstKeyIdOf } from './domain/application.ts';
import { tenancyMigrations } from './migrations.ts';

const keysMigration = 'tenancy/007_application_keys';
const infrastructure = [...eventStoreMigrations, ...projectorMigrations];
const before = tenancyMigrations.slice(
  0,
  tenancyMigrations.findIndex((migration) => migration.id === keysMigration),
);

describe(`migration ${keysMigration} on the keys written before it`, () => {
  const [tenant, application, creator] = [randomUUID(), randomUUID(), randomUUID()];
  const createdAt = new Date('2026-01-10T10:00:00.000Z');
  let database: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    database = await createTestDatabase([...infrastructure, ...before]);
    pool = createPool({ connectionString: database.url, max: 2 });
    await pool.query(
      `INSERT INTO applications (tenant_id, id, name, type, permissions, rules, created_by, created_at)
         VALUES ($1, $2, 'Backend', 'private', '{token:read}', '[]', $3, $4)`,
      [tenant, application, creator, createdAt],
    );
    await pool.query('INSERT INTO api_keys (key_hash, tenant_id, application_id) VALUES ($1, $2, $3)', [
      'digest-before',
      tenant,
      application,
    ]);
    await migrate(pool, [...infrastructure, ...tenancyMigrations], testAppRole);
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('gives the key its application’s id and creation, and no expiry', async () => {
    const rows = await pool.query('SELECT * FROM api_keys');
    expect(rows.rows).toEqual([
      {
        key_hash: 'digest-before',
        tenant_id: tenant,
        application_id: application,
        id: firstKeyIdOf(application),
        expires_at: null,
        created_by: creator,
        created_at: createdAt,
      },
    ]);
  });
});
