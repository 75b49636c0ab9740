import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type PoolClient } from '@tokenvault/platform';
import { projectionHandler, type DataOf, type Projection } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import type { TokenType } from '@tokenvault/contracts';
import { vaultMigrations } from '@tokenvault/vault';
import { tokensMigrations } from '../migrations.ts';
import { tokenReadsStream, tokenStream, type TokensContextEvent } from '../domain/tokens.events.ts';
import { tokenUsageProjection } from './usage.projection.ts';
import { tokensProjection } from './tokens.projection.ts';

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

/** An update; `createdAt` undefined: as events from before they recorded the creation time. */
const updated = (tokenId: string, at: string, createdAt: string | undefined, tenantId = tenant) => {
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
    ...(createdAt ? { created_at: createdAt } : {}),
  };
  return recordedEvent('TokenUpdated', data, { stream: tokenStream(tenantId, tokenId) });
};

/** One request's read of one token, as the service records reads now (with the token's creation time). */
const read = (tokenId: string, at: string, createdAt: string, tenantId = tenant) => {
  const data: DataOf<TokensContextEvent, 'TokensReadBatch'> = {
    reads: [
      {
        tenant_id: tenantId,
        tokens: [{ token_id: tokenId, type: 'token', created_at: createdAt }],
        read_by: actor,
        reader_type: 'application',
        correlation_id: 'request-1',
        read_at: at,
      },
    ],
  };
  return recordedEvent('TokensReadBatch', data, { stream: tokenReadsStream(0) });
};

/** A read as events from before TokensRead record it (no creation time). */
const legacyRead = (tokenId: string, at: string, tenantId = tenant) => {
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
  /** The token rows with the usage, as the projector applies them (each batch to the token rows first). */
  const withTokenRows: Projection = {
    name: 'tokens-then-usage',
    tables: [...tokensProjection.tables, ...tokenUsageProjection.tables],
    handles: [...new Set([...tokensProjection.handles, ...tokenUsageProjection.handles])],
    apply: (events, tx) => projectionHandler([tokensProjection, tokenUsageProjection]).handle(events, tx),
  };
  const specWithTokenRows = () =>
    projectionSpec(withTokenRows, db.pool, { settings: { TimeZone: 'Pacific/Kiritimati' } });

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
    it('counts a creation in its month without a row of its own', async () => {
      await spec()
        .given([created('t-1', 'token', '2026-01-05T00:00:00.000Z')])
        .when([
          created('t-2', 'card', '2026-01-06T00:00:00.000Z'),
          created('t-3', 'token', '2026-02-01T00:00:00.000Z'),
          created('t-4', 'token', '2026-02-02T00:00:00.000Z', otherTenant),
        ])
        .then(async (tx) => {
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 1 });
          expect(await monthlyUsage(tx, otherTenant)).toEqual({ '2026-02-01': 1 });
          expect(await monthlyActivity(tx)).toEqual({});
          expect(await monthlyActivity(tx, otherTenant)).toEqual({});
        });
    });

    it('counts each token once a month, however often it is created, updated and read', async () => {
      const jan5 = '2026-01-05T00:00:00.000Z';
      const jan6 = '2026-01-06T00:00:00.000Z';
      await spec()
        .given([created('t-1', 'token', jan5), created('t-2', 'card', jan6)])
        .when([
          read('t-1', '2026-01-08T00:00:00.000Z', jan5),
          read('t-1', '2026-01-09T00:00:00.000Z', jan5),
          updated('t-1', '2026-01-10T00:00:00.000Z', jan5),
          read('t-2', '2026-01-10T00:00:00.000Z', jan6),
          updated('t-2', '2026-01-11T00:00:00.000Z', jan6),
          updated('t-2', '2026-01-12T00:00:00.000Z', jan6),
        ])
        .then(async (tx) => {
          // Their uses in the month they were created in write nothing.
          expect(await monthlyActivity(tx)).toEqual({});
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2 });
        });
    });

    it('counts a token again in each later month it is active in, once', async () => {
      const jan5 = '2026-01-05T00:00:00.000Z';
      const feb5 = '2026-02-05T00:00:00.000Z';
      await spec()
        .given([created('t-1', 'token', jan5), created('t-2', 'token', jan5), created('t-3', 'token', feb5)])
        .when([
          read('t-1', '2026-02-10T00:00:00.000Z', jan5),
          read('t-1', '2026-02-11T00:00:00.000Z', jan5),
          updated('t-1', '2026-02-12T00:00:00.000Z', jan5),
          updated('t-2', '2026-03-10T00:00:00.000Z', jan5),
          read('t-3', '2026-03-11T00:00:00.000Z', feb5),
          updated('t-3', '2026-03-12T00:00:00.000Z', feb5),
        ])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({
            '2026-02-01': ['t-1'],
            '2026-03-01': ['t-2', 't-3'],
          });
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 2, '2026-03-01': 2 });
        });
    });

    it('takes the months in UTC, whatever the zone of the event’s times or of the session', async () => {
      // 2026-01-31T23:30 UTC: January, though February in Kiritimati and in the offset of the read.
      const lateJanuary = '2026-02-01T01:30:00.000+02:00';
      await spec()
        .given([])
        .when([
          created('jan', 'token', '2026-01-31T23:59:59.999Z'),
          created('late-jan', 'token', lateJanuary),
          // 2026-02-01T00:30 UTC.
          read('jan', '2026-01-31T22:30:00.000-02:00', '2026-01-31T23:59:59.999Z'),
          // 2026-01-31T23:45 UTC: the month of its creation.
          read('late-jan', '2026-02-01T01:45:00.000+02:00', lateJanuary),
          updated('late-jan', '2026-02-01T00:00:00.000Z', lateJanuary),
        ])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({ '2026-02-01': ['jan', 'late-jan'] });
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 2 });
        });
    });

    it('keeps tenants apart', async () => {
      const dec = '2025-12-01T00:00:00.000Z';
      await spec()
        .given([])
        .when([
          read('t-1', '2026-01-08T00:00:00.000Z', dec),
          read('t-1', '2026-01-08T00:00:00.000Z', dec, otherTenant),
          read('t-2', '2026-01-08T00:00:00.000Z', dec, otherTenant),
        ])
        .then(async (tx) => {
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 1 });
          expect(await monthlyUsage(tx, otherTenant)).toEqual({ '2026-01-01': 2 });
        });
    });

    it('counts the reads of a TokensReadBatch each under its own tenant, in its own month', async () => {
      const dec = '2025-12-01T00:00:00.000Z';
      const readOf = (tenantId: string, tokens: [string, string][], at: string) => ({
        tenant_id: tenantId,
        tokens: tokens.map(([token, createdAt]) => ({
          token_id: token,
          type: 'token' as const,
          created_at: createdAt,
        })),
        read_by: actor,
        reader_type: 'application' as const,
        correlation_id: 'request-1',
        read_at: at,
      });
      const data: DataOf<TokensContextEvent, 'TokensReadBatch'> = {
        reads: [
          readOf(
            tenant,
            [
              ['t-1', dec],
              ['t-2', dec],
              ['new', '2026-01-20T00:00:00.000Z'],
            ],
            '2026-01-31T23:59:59.999Z',
          ),
          readOf(otherTenant, [['t-9', dec]], '2026-02-01T00:00:00.000Z'),
          readOf(tenant, [['t-1', dec]], '2026-02-01T00:00:00.000Z'),
        ],
      };
      await spec()
        .given([])
        .when([recordedEvent('TokensReadBatch', data, { stream: tokenReadsStream(0) })])
        .then(async (tx) => {
          expect(await monthlyActivity(tx)).toEqual({ '2026-01-01': ['t-1', 't-2'], '2026-02-01': ['t-1'] });
          expect(await monthlyActivity(tx, otherTenant)).toEqual({ '2026-02-01': ['t-9'] });
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 1 });
        });
    });

    it('is idempotent: reads and updates applied again count nothing more', async () => {
      const dec = '2025-12-01T00:00:00.000Z';
      const events = [
        read('t-1', '2026-01-08T00:00:00.000Z', dec),
        updated('t-2', '2026-01-09T00:00:00.000Z', dec),
        read('t-3', '2026-02-08T00:00:00.000Z', dec),
        legacyRead('t-4', '2026-02-08T00:00:00.000Z'),
      ];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 2 });
          expect(await monthlyActivity(tx)).toEqual({
            '2026-01-01': ['t-1', 't-2'],
            '2026-02-01': ['t-3', 't-4'],
          });
        });
    });

    describe('events from before reads and updates recorded the creation time', () => {
      const legacyReads = (tokenId: string, at: string) => {
        const data: DataOf<TokensContextEvent, 'TokensRead'> = {
          tenant_id: tenant,
          tokens: [{ token_id: tokenId, type: 'token' }],
          read_by: actor,
          read_at: at,
        };
        return recordedEvent('TokensRead', data, { stream: tokenReadsStream(0) });
      };

      it('take it from the token’s row: a use in the creation’s month counts nothing more', async () => {
        await specWithTokenRows()
          .given([
            created('t-1', 'token', '2026-01-05T00:00:00.000Z'),
            created('t-2', 'token', '2026-01-05T00:00:00.000Z'),
          ])
          .when([
            legacyRead('t-1', '2026-01-08T00:00:00.000Z'),
            legacyReads('t-2', '2026-01-09T00:00:00.000Z'),
            updated('t-2', '2026-01-10T00:00:00.000Z', undefined),
            legacyRead('t-1', '2026-02-08T00:00:00.000Z'),
            legacyReads('t-1', '2026-02-09T00:00:00.000Z'),
            updated('t-2', '2026-03-01T00:00:00.000Z', undefined),
          ])
          .then(async (tx) => {
            expect(await monthlyActivity(tx)).toEqual({ '2026-02-01': ['t-1'], '2026-03-01': ['t-2'] });
            expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 2, '2026-02-01': 1, '2026-03-01': 1 });
          });
      });

      it('count the use of a token without a row (deleted since) in its month, once', async () => {
        await specWithTokenRows()
          .given([created('gone', 'token', '2026-01-05T00:00:00.000Z'), deleted('gone', 'token')])
          .when([
            legacyRead('gone', '2026-02-08T00:00:00.000Z'),
            legacyRead('gone', '2026-02-09T00:00:00.000Z'),
          ])
          .then(async (tx) => {
            expect(await monthlyActivity(tx)).toEqual({ '2026-02-01': ['gone'] });
            expect(await monthlyUsage(tx)).toEqual({ '2026-01-01': 1, '2026-02-01': 1 });
          });
      });
    });
  });

  describe('TenantDeleted', () => {
    it('removes the tenant’s counters and activity, and no other tenant’s', async () => {
      const jan5 = '2026-01-05T00:00:00.000Z';
      await spec()
        .given([
          created('t-1', 'token', jan5),
          read('t-1', '2026-02-05T00:00:00.000Z', jan5),
          created('t-1', 'card', jan5, otherTenant),
          read('t-1', '2026-02-05T00:00:00.000Z', jan5, otherTenant),
        ])
        .when([tenantDeleted(tenant)])
        .then(async (tx) => {
          expect(await typeCounts(tx)).toEqual({});
          expect(await monthlyActivity(tx)).toEqual({});
          expect(await monthlyUsage(tx)).toEqual({});
          expect(await dailyCreations(tx)).toEqual({});
          expect(await typeCounts(tx, otherTenant)).toEqual({ card: 1 });
          expect(await dailyCreations(tx, otherTenant)).toEqual({ '2026-01-05 card': 1 });
          expect(await monthlyActivity(tx, otherTenant)).toEqual({ '2026-02-01': ['t-1'] });
          expect(await monthlyUsage(tx, otherTenant)).toEqual({ '2026-01-01': 1, '2026-02-01': 1 });
        });
    });
  });
});
