import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PoolClient } from '@tokenvault/platform';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import { vaultMigrations } from '@tokenvault/vault';
import { tokensMigrations } from '../migrations.ts';
import { tokenIntentStream, type TokenIntentEvent } from '../domain/tokens.events.ts';
import { tokenIntentsProjection } from './token-intents.projection.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();
const expiresAt = '2026-01-02T00:00:00.000Z';
/** Intent ids in the order the rows are read back. */
const [i1, i2, i3, i4] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()].sort() as [
  string,
  string,
  string,
  string,
];

const event = (intentId: string, tenantId: string, data: TokenIntentEvent) =>
  recordedEvent(data.type, data.data, { stream: tokenIntentStream(tenantId, intentId) });
const created = (intentId: string, tenantId = tenant) =>
  event(intentId, tenantId, {
    type: 'TokenIntentCreated',
    data: {
      intent_id: intentId,
      tenant_id: tenantId,
      type: 'card',
      data_ciphertext: `tk:sealed-${intentId}`,
      fingerprint: `fp-${intentId}`,
      expires_at: expiresAt,
      created_by: actor,
      created_at: '2026-01-01T00:00:00.000Z',
    },
  });
const ended = (
  intentId: string,
  type: 'TokenIntentConverted' | 'TokenIntentDeleted' | 'TokenIntentExpired',
) =>
  event(
    intentId,
    tenant,
    type === 'TokenIntentConverted'
      ? {
          type,
          data: {
            intent_id: intentId,
            tenant_id: tenant,
            type: 'card',
            token_id: 'tok-1',
            converted_by: actor,
            converted_at: expiresAt,
          },
        }
      : type === 'TokenIntentDeleted'
        ? {
            type,
            data: {
              intent_id: intentId,
              tenant_id: tenant,
              type: 'card',
              deleted_by: actor,
              deleted_at: expiresAt,
            },
          }
        : { type, data: { intent_id: intentId, tenant_id: tenant, type: 'card', expired_at: expiresAt } },
  );

const held = async (tx: PoolClient) =>
  (
    await tx.query<{ tenant_id: string; intent_id: string; expires_at: Date }>(
      'SELECT tenant_id, intent_id, expires_at FROM token_intents ORDER BY intent_id',
    )
  ).rows.map((row) => [row.tenant_id, row.intent_id, row.expires_at.toISOString()]);

describe('tokenIntentsProjection', () => {
  const db = useTestPool([...vaultMigrations, ...tokensMigrations]);
  const spec = () => projectionSpec(tokenIntentsProjection, db.pool);

  it('keeps each held intent with its expiry (no data, no ciphertext)', async () => {
    await spec()
      .given([])
      .when([created(i1), created(i2, otherTenant)])
      .then(async (tx) => {
        expect(await held(tx)).toEqual([
          [tenant, i1, expiresAt],
          [otherTenant, i2, expiresAt],
        ]);
        const columns = await tx.query(`SELECT * FROM token_intents LIMIT 1`);
        expect(columns.fields.map((field) => field.name).sort()).toEqual(
          ['created_at', 'expires_at', 'intent_id', 'tenant_id', 'type'].sort(),
        );
      });
  });

  it('drops an intent when it is converted, deleted or expired', async () => {
    await spec()
      .given([created(i1), created(i2), created(i3), created(i4)])
      .when([
        ended(i1, 'TokenIntentConverted'),
        ended(i2, 'TokenIntentDeleted'),
        ended(i3, 'TokenIntentExpired'),
      ])
      .then(async (tx) => expect(await held(tx)).toEqual([[tenant, i4, expiresAt]]));
  });

  it('drops a deleted tenant’s intents, and only its', async () => {
    await spec()
      .given([created(i1), created(i2, otherTenant)])
      .when([recordedEvent('TenantDeleted', { tenant_id: tenant })])
      .then(async (tx) => expect(await held(tx)).toEqual([[otherTenant, i2, expiresAt]]));
  });
});
