import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PoolClient } from '@tokenvault/platform';
import type { DataOf } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import { proxiesMigrations } from '../migrations.ts';
import { streams, type ProxiesEvent } from '../domain/proxy.events.ts';
import { proxiesProjection } from './proxies.projection.ts';

const tenant: string = randomUUID();
const otherTenant: string = randomUUID();
const actor = randomUUID();
const reactor = randomUUID();
const created_at = '2026-01-10T10:00:00.000Z';
const modified_at = '2026-01-11T10:00:00.000Z';
const transform = { type: 'code' as const, code: 'module.exports = async (req) => req.args;' };

const proxyCreated = (proxyId: string, tenantId = tenant) => {
  const data: DataOf<ProxiesEvent, 'ProxyCreated'> = {
    proxy_id: proxyId,
    tenant_id: tenantId,
    name: 'Outbound',
    destination_url: 'https://api.example.com/v1',
    request_reactor_id: reactor,
    request_transforms: [transform],
    response_transforms: [],
    configuration_ciphertext: `sealed-configuration-${proxyId}`,
    key_ciphertext: `sealed-key-${proxyId}`,
    key_hash: `hash-${proxyId}`,
    require_auth: true,
    timeout: 2.5,
    created_by: actor,
    created_at,
  };
  return recordedEvent('ProxyCreated', data, { stream: streams.proxy(tenantId, proxyId) });
};
const proxyUpdated = (proxyId: string) => {
  const data: DataOf<ProxiesEvent, 'ProxyUpdated'> = {
    proxy_id: proxyId,
    tenant_id: tenant,
    name: 'Inbound',
    destination_url: 'https://api.example.com/v2',
    request_transforms: [],
    response_transforms: [transform],
    configuration_ciphertext: `sealed-again-${proxyId}`,
    require_auth: false,
    modified_by: actor,
    modified_at,
  };
  return recordedEvent('ProxyUpdated', data, { stream: streams.proxy(tenant, proxyId) });
};
const proxyDeleted = (proxyId: string, tenantId = tenant) => {
  const data: DataOf<ProxiesEvent, 'ProxyDeleted'> = {
    proxy_id: proxyId,
    tenant_id: tenantId,
    deleted_by: actor,
    deleted_at: modified_at,
  };
  return recordedEvent('ProxyDeleted', data, { stream: streams.proxy(tenantId, proxyId) });
};
const tenantDeleted = (tenantId: string) =>
  recordedEvent('TenantDeleted', { tenant_id: tenantId, deleted_by: actor, deleted_at: modified_at });

const proxies = async (tx: PoolClient) =>
  (await tx.query<Record<string, unknown>>('SELECT * FROM proxies ORDER BY tenant_id, id')).rows;
const keys = async (tx: PoolClient) =>
  (await tx.query<Record<string, unknown>>('SELECT * FROM proxy_keys ORDER BY tenant_id, proxy_id')).rows;

describe('proxiesProjection', () => {
  const db = useTestPool(proxiesMigrations);
  const spec = () => projectionSpec(proxiesProjection, db.pool);

  it('ProxyCreated inserts the proxy (secrets sealed) and its key hash, once', async () => {
    const proxy = randomUUID();
    const events = [proxyCreated(proxy)];
    await spec()
      .given(events)
      .when(events)
      .then(async (tx) => {
        expect(await proxies(tx)).toEqual([
          {
            tenant_id: tenant,
            id: proxy,
            name: 'Outbound',
            destination_url: 'https://api.example.com/v1',
            request_reactor_id: reactor,
            response_reactor_id: null,
            request_transforms: [transform],
            response_transforms: [],
            application_id: null,
            configuration_ciphertext: `sealed-configuration-${proxy}`,
            key_ciphertext: `sealed-key-${proxy}`,
            require_auth: true,
            timeout_seconds: 2.5,
            created_by: actor,
            created_at: new Date(created_at),
            modified_by: null,
            modified_at: null,
          },
        ]);
        expect(await keys(tx)).toEqual([{ key_hash: `hash-${proxy}`, tenant_id: tenant, proxy_id: proxy }]);
      });
  });

  it('ProxyUpdated replaces the settings; what the event leaves out is removed; the key stays', async () => {
    const proxy = randomUUID();
    await spec()
      .given([proxyCreated(proxy)])
      .when([proxyUpdated(proxy)])
      .then(async (tx) => {
        expect(await proxies(tx)).toMatchObject([
          {
            id: proxy,
            name: 'Inbound',
            destination_url: 'https://api.example.com/v2',
            request_reactor_id: null,
            request_transforms: [],
            response_transforms: [transform],
            configuration_ciphertext: `sealed-again-${proxy}`,
            key_ciphertext: `sealed-key-${proxy}`,
            require_auth: false,
            timeout_seconds: null,
            created_at: new Date(created_at),
            modified_by: actor,
            modified_at: new Date(modified_at),
          },
        ]);
        expect(await keys(tx)).toHaveLength(1);
      });
  });

  it('ProxyDeleted removes the proxy and its key, and no other', async () => {
    const [gone, kept, foreign] = [randomUUID(), randomUUID(), randomUUID()];
    const ids = (rows: Record<string, unknown>[], column: string) => rows.map((row) => row[column]).sort();
    await spec()
      .given([proxyCreated(gone), proxyCreated(kept), proxyCreated(foreign, otherTenant)])
      .when([proxyDeleted(gone)])
      .then(async (tx) => {
        expect(ids(await proxies(tx), 'id')).toEqual([kept, foreign].sort());
        expect(ids(await keys(tx), 'proxy_id')).toEqual([kept, foreign].sort());
      });
  });

  it('TenantDeleted removes only that tenant’s proxies and keys', async () => {
    const [kept, foreign] = [randomUUID(), randomUUID()];
    await spec()
      .given([proxyCreated(kept), proxyCreated(foreign, otherTenant)])
      .when([tenantDeleted(tenant)])
      .then(async (tx) => {
        expect((await proxies(tx)).map((row) => row.id)).toEqual([foreign]);
        expect((await keys(tx)).map((row) => row.proxy_id)).toEqual([foreign]);
      });
  });
});
