import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type PoolClient } from '@tokenvault/platform';
import type { DataOf } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import type { TokenType } from '@tokenvault/contracts';
import { vaultMigrations } from '@tokenvault/vault';
import { tokensMigrations } from '../migrations.ts';
import { tokenReadsStream, tokenStream, type TokensContextEvent } from '../domain/tokens.events.ts';
import { tokenUsageProjection } from './usage.projection.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();

const created = (tokenId: string, type: TokenType, at: string, tenantId = tenant) => {
  const data: DataOf<TokensContextEvent, 'TokenCreated'> = {
    token_id: tokenId,
    tenant_id: tenantId,
    type,
    data_ciphertext: `sealed-${tokenId}`,
    containers: ['/general/'],
    metadata: {},
    fingerprint: `fp-${tokenId}`,
    created_by: actor,
    created_at: at,
  };
  return recordedEvent('TokenCreated', data, { stream: tokenStream(tenantId, tokenId) });
};

const updated = (tokenId: string, at: string, tenantId = tenant) => {
  const data: DataOf<TokensContextEvent, 'TokenUpdated'> = {
    token_id: tokenId,
    tenant_id: tenantId,
    type: 'token',
    data_ciphertext: `sealed-again-${tokenId}`,
    fingerprint: `fp-again-${tokenId}`,
    containers: ['/general/'],
    metadata: {},
    modified_by: actor,
    modified_at: at,
  };
  return recordedEvent('TokenUpdated', data, { stream: tokenStream(tenantId, tokenId) });
};

const read = (tokenId: string, at: string, tenantId = tenant) => {
  const data: DataOf<TokensContextEvent, 'TokenRead'> = {
    token_id: tokenId,
    tenant_id: tenantId,
    type: 'token',
    read_by: actor,
    read_at: at,
  };
  return recordedEvent('TokenRead', data, { stream: tokenReadsStream(0) });
};

const deleted = (tokenId: string, type: TokenType, tenantId = tenant) => {
  const data: DataOf<TokensContextEvent, 'TokenDeleted'> = {
    token_id: tokenId,
    tenant_id: tenantId,
    type,
    parent_ids: [],
    child_ids: [],
    deleted_by: actor,
    deleted_at: '2026-03-01T00:00:00.000Z',
  };
  return recordedEvent('TokenDeleted', data, { stream: tokenStream(tenantId, tokenId) });
};

const tenantDeleted = (tenantId: string) =>
  recordedEvent('TenantDeleted', {
    tenant_id: tenantId,
    deleted_by: actor,
    deleted_at: '2026-03-01T00:00:00.000Z',
  });

/** `type: count`, of one tenant. */
const typeCounts = async (tx: PoolClient, tenantId = tenant) =>
  Object.fromEntries(
    (
      await tx.query<{ type: string; count: number }>(
        'SELECT type, count FROM token_type_usage WHERE tenant_id = $1 ORDER BY type',
        [tenantId],
      )
    ).rows.map((row) => [row.type, row.count]),
  );

const lastCreatedAt = async (tx: PoolClient, type: TokenType) =>
  (
    await tx.query<{ last_created_at: Date }>(
      'SELECT last_created_at FROM token_type_usage WHERE tenant_id = $1 AND type = $2',
      [tenant, type],
    )
  ).rows[0]?.last_created_at;

/** `month: active tokens`, of one tenant (months as dates, UTC). */
const monthlyUsage = async (tx: PoolClient, tenantId = tenant) =>
  Object.fromEntries(
    (
      await tx.query<{ month: string; active_tokens: number }>(
        'SELECT month::text, active_tokens FROM token_monthly_usage WHERE tenant_id = $1 ORDER BY month',
        [tenantId],
      )
    ).rows.map((row) => [row.month, row.active_tokens]),
  );

/** `month: token ids`, of one tenant. */
const monthlyActivity = async (tx: PoolClient, tenantId = tenant) => {
  const { rows } = await tx.query<{ month: string; tokens: string[] }>(
    `SELECT month::text, array_agg(token_id ORDER BY token_id) AS tokens
     FROM token_monthly_activity WHERE tenant_id = $1 GROUP BY month ORDER BY month`,
    [tenantId],
  );
  return Object.fromEntries(rows.map((row) => [row.month, row.tokens]));
};

/** `day type: created`, of one tenant (UTC days). */
const dailyCreations = async (tx: PoolClient, tenantId = tenant) =>
  Object.fromEntries(
    (
      await tx.query<{ day: string; type: string; created: number }>(
        `SELECT day::text, type, created FROM token_daily_creations WHERE tenant_id = $1 ORDER BY day, type`,
        [tenantId],
      )
    ).rows.map((row) => [`${row.day} ${row.type}`, Number(row.created)]),
  );

describe('tokenUsageProjection', () => {
  const db = useTestPool([...vaultMigrations, ...tokensMigrations]);
  // A session far from UTC: months are calendar months in UTC whatever the connection's zone.
  const spec = () =>
    projectionSpec(tokenUsageProjection, db.pool, { settings: { TimeZone: 'Pacific/Kiritimati' } });

  describe('tokens per type', () => {
    it('counts created tokens per tenant and type, with the latest creation', async () => {
      await spec()
        .given([])
        .when([
          created('t-1', 'token', '2026-01-05T00:00:00.000Z'),
          created('c-1', 'card', '2026-01-06T00:00:00.000Z'),
          created('t-2', 'token', '2026-01-07T00:00:00.000Z'),
          created('t-3', 'token', '2026-01-03T00:00:00.000Z'),
          created('t-1', 'token', '2026-01-05T00:00:00.000Z', otherTenant),
        ])
        .then(async (tx) => {
          expect(await typeCounts(tx)).toEqual({ card: 1, token: 3 });
          expect(await typeCounts(tx, otherTenant)).toEqual({ token: 1 });
          expect(await lastCreatedAt(tx, 'token')).toEqual(new Date('2026-01-07T00:00:00.000Z'));
        });
    });

    it('adds later batches to the counts, keeping the latest creation', async () => {
      await spec()
        .given([created('t-1', 'token', '2026-01-07T00:00:00.000Z')])
        .when([
          created('t-2', 'token', '2026-01-02T00:00:00.000Z'),
          created('b-1', 'bank', '2026-01-02T00:00:00.000Z'),
        ])
        .then(async (tx) => {
          expect(await typeCounts(tx)).toEqual({ bank: 1, token: 2 });
          expect(await lastCreatedAt(tx, 'token')).toEqual(new Date('2026-01-07T00:00:00.000Z'));
        });
    });

    it('takes deleted tokens off their type’s count only', async () => {
      await spec()
        .given([
          created('t-1', 'token', '2026-01-05T00:00:00.000Z'),
          created('t-2', 'token', '2026-01-05T00:00:00.000Z'),
          created('t-3', 'token', '2026-01-05T00:00:00.000Z'),
          created('c-1', 'card', '2026-01-05T00:00:00.000Z'),
          created('t-1', 'token', '2026-01-05T00:00:00.000Z', otherTenant),
        ])
        .when([deleted('t-1', 'token'), deleted('t-2', 'token')])
        .then(async (tx) => {
          expect(await typeCounts(tx)).toEqual({ card: 1, token: 1 });
          expect(await typeCounts(tx, otherTenant)).toEqual({ token: 1 });
          // They were active in January all the same.
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 4 });
        });
    });
  });

  describe('tokens created per day and type', () => {
    it('counts creations per UTC day and type, whatever the session’s zone, and keeps deleted ones', async () => {
      await spec()
        .given([created('t-1', 'token', '2026-01-05T10:00:00.000Z')])
        .when([
          created('t-2', 'token', '2026-01-05T23:59:59.999Z'),
          created('c-1', 'card', '2026-01-05T12:00:00.000Z'),
          // Already 2026-01-06 in Kiritimati at 10:00 UTC on the 5th: still the 5th in UTC.
          created('t-3', 'token', '2026-01-06T00:00:00.000Z'),
          created('t-1', 'token', '2026-01-05T00:00:00.000Z', otherTenant),
          deleted('t-1', 'token'),
        ])
        .then(async (tx) => {
          expect(await dailyCreations(tx)).toEqual({
            '2026-01-05 card': 1,
            '2026-01-05 token': 2,
            '2026-01-06 token': 1,
          });
          expect(await dailyCreations(tx, otherTenant)).toEqual({ '2026-01-05 token': 1 });
        });
    });
  });

  describe('monthly active tokens', () => {
    it('counts each token once a month, however often it is created, updated and read', async () => {
      await spec()
        .given([
          created('t-1', 'token', '2026-01-05T00:00:00.000Z'),
          created('t-2', 'card', '2026-01-06T00:00:00.000Z'),
        ])
        .when([
          read('t-1', '2026-01-08T00:00:00.000Z'),
          read('t-1', '2026-01-09T00:00:00.000Z'),
          updated('t-1', '2026-01-10T00:00:00.000Z'),
          read('t-2', '2026-01-10T00:00:00.000Z'),
          updated('t-2', '2026-01-11T00:00:00.000Z'),
          updated('t-2', '2026-01-12T00:00:00.000Z'),
        ])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({ '2026-01-01': ['t-1', 't-2'] });
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2 });
        });
    });

    it('counts a token again in each later month it is active in', async () => {
      await spec()
        .given([
          created('t-1', 'token', '2026-01-05T00:00:00.000Z'),
          created('t-2', 'token', '2026-01-05T00:00:00.000Z'),
          created('t-3', 'token', '2026-02-05T00:00:00.000Z'),
        ])
        .when([
          read('t-1', '2026-02-10T00:00:00.000Z'),
          updated('t-2', '2026-03-10T00:00:00.000Z'),
          read('t-3', '2026-03-11T00:00:00.000Z'),
        ])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({
            '2026-01-01': ['t-1', 't-2'],
            '2026-02-01': ['t-1', 't-3'],
            '2026-03-01': ['t-2', 't-3'],
          });
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 2, '2026-03-01': 2 });
        });
    });

    it('takes the month in UTC, whatever the zone of the event’s time or of the session', async () => {
      await spec()
        .given([])
        .when([
          created('jan', 'token', '2026-01-31T23:59:59.999Z'),
          // 2026-02-01T00:30 UTC.
          read('feb', '2026-01-31T22:30:00.000-02:00'),
          updated('feb-too', '2026-02-01T00:00:00.000Z'),
        ])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({
            '2026-01-01': ['jan'],
            '2026-02-01': ['feb', 'feb-too'],
          });
        });
    });

    it('keeps tenants apart', async () => {
      await spec()
        .given([])
        .when([
          read('t-1', '2026-01-08T00:00:00.000Z'),
          read('t-1', '2026-01-08T00:00:00.000Z', otherTenant),
          read('t-2', '2026-01-08T00:00:00.000Z', otherTenant),
        ])
        .then(async (tx) => {
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 1 });
          expect(await monthlyUsage(tx, otherTenant)).toEqual({ '2026-01-01': 2 });
        });
    });

    it('counts the reads of a TokensReadBatch each under its own tenant, in its own month', async () => {
      const readOf = (tenantId: string, tokens: string[], at: string) => ({
        tenant_id: tenantId,
        tokens: tokens.map((token) => ({ token_id: token, type: 'token' as const })),
        read_by: actor,
        reader_type: 'application' as const,
        correlation_id: 'request-1',
        read_at: at,
      });
      const data: DataOf<TokensContextEvent, 'TokensReadBatch'> = {
        reads: [
          readOf(tenant, ['t-1', 't-2'], '2026-01-31T23:59:59.999Z'),
          readOf(otherTenant, ['t-9'], '2026-02-01T00:00:00.000Z'),
          readOf(tenant, ['t-1'], '2026-02-01T00:00:00.000Z'),
        ],
      };
      await spec()
        .given([])
        .when([recordedEvent('TokensReadBatch', data, { stream: tokenReadsStream(0) })])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({ '2026-01-01': ['t-1', 't-2'], '2026-02-01': ['t-1'] });
          expect(await monthlyActivity(tx, otherTenant)).toEqual({ '2026-02-01': ['t-9'] });
        });
    });

    it('is idempotent: reads and updates applied again count nothing more', async () => {
      const events = [
        read('t-1', '2026-01-08T00:00:00.000Z'),
        updated('t-2', '2026-01-09T00:00:00.000Z'),
        read('t-3', '2026-02-08T00:00:00.000Z'),
      ];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 1 });
          expect(await monthlyActivity(tx)).toEqual({ '2026-01-01': ['t-1', 't-2'], '2026-02-01': ['t-3'] });
        });
    });
  });

  describe('TenantDeleted', () => {
    it('removes the tenant’s counters and activity, and no other tenant’s', async () => {
      await spec()
        .given([
          created('t-1', 'token', '2026-01-05T00:00:00.000Z'),
          read('t-1', '2026-02-05T00:00:00.000Z'),
          created('t-1', 'card', '2026-01-05T00:00:00.000Z', otherTenant),
          read('t-1', '2026-02-05T00:00:00.000Z', otherTenant),
        ])
        .when([tenantDeleted(tenant)])
        .then(async (tx) => {
          expect(await typeCounts(tx)).toEqual({});
          expect(await monthlyActivity(tx)).toEqual({});
          expect(await monthlyUsage(tx)).toEqual({});
          expect(await dailyCreations(tx)).toEqual({});
          expect(await typeCounts(tx, otherTenant)).toEqual({ card: 1 });
          expect(await dailyCreations(tx, otherTenant)).toEqual({ '2026-01-05 card': 1 });
          expect(await monthlyActivity(tx, otherTenant)).toEqual({
            '2026-01-01': ['t-1'],
            '2026-02-01': ['t-1'],
          });
          expect(await monthlyUsage(tx, otherTenant)).toEqual({ '2026-01-01': 1, '2026-02-01': 1 });
        });
    });
  });
});
