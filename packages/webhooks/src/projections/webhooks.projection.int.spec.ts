import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PoolClient } from '@tokenvault/platform';
import type { DataOf } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import { webhooksMigrations } from '../migrations.ts';
import { streams, type WebhooksEvent } from '../domain/webhooks.events.ts';
import { webhooksProjection } from './webhooks.projection.ts';

const tenant: string = randomUUID();
const otherTenant: string = randomUUID();
const actor = randomUUID();
const created_at = '2026-01-10T10:00:00.000Z';
const modified_at = '2026-01-11T10:00:00.000Z';

const webhookCreated = (webhookId: string, tenantId = tenant) => {
  const data: DataOf<WebhooksEvent, 'WebhookCreated'> = {
    webhook_id: webhookId,
    tenant_id: tenantId,
    name: 'Orders',
    url: 'https://hooks.example.com/in',
    events: ['token:created', 'token:deleted'],
    notify_email: 'ops@example.com',
    status: 'enabled',
    created_by: actor,
    created_at,
  };
  return recordedEvent('WebhookCreated', data, { stream: streams.webhook(tenantId, webhookId) });
};
const webhookUpdated = (webhookId: string) => {
  const data: DataOf<WebhooksEvent, 'WebhookUpdated'> = {
    webhook_id: webhookId,
    tenant_id: tenant,
    name: 'Renamed',
    url: 'https://hooks.example.com/v2',
    events: ['token:updated'],
    status: 'disabled',
    modified_by: actor,
    modified_at,
  };
  return recordedEvent('WebhookUpdated', data, { stream: streams.webhook(tenant, webhookId) });
};
const webhookDeleted = (webhookId: string) => {
  const data: DataOf<WebhooksEvent, 'WebhookDeleted'> = {
    webhook_id: webhookId,
    tenant_id: tenant,
    deleted_by: actor,
    deleted_at: modified_at,
  };
  return recordedEvent('WebhookDeleted', data, { stream: streams.webhook(tenant, webhookId) });
};
const tenantDeleted = (tenantId: string) =>
  recordedEvent('TenantDeleted', { tenant_id: tenantId, deleted_by: actor, deleted_at: modified_at });

const webhooks = async (tx: PoolClient) =>
  (await tx.query<Record<string, unknown>>('SELECT * FROM webhooks ORDER BY tenant_id, id')).rows;

describe('webhooksProjection', () => {
  const db = useTestPool(webhooksMigrations);
  const spec = () => projectionSpec(webhooksProjection, db.pool);

  it('WebhookCreated inserts the webhook, once', async () => {
    const webhook = randomUUID();
    const events = [webhookCreated(webhook)];
    await spec()
      .given(events)
      .when(events)
      .then(async (tx) => {
        expect(await webhooks(tx)).toEqual([
          {
            tenant_id: tenant,
            id: webhook,
            name: 'Orders',
            url: 'https://hooks.example.com/in',
            events: ['token:created', 'token:deleted'],
            notify_email: 'ops@example.com',
            status: 'enabled',
            created_by: actor,
            created_at: new Date(created_at),
            modified_by: null,
            modified_at: null,
          },
        ]);
      });
  });

  it('WebhookUpdated replaces the settings (a notify_email left out is removed) and its status', async () => {
    const webhook = randomUUID();
    await spec()
      .given([webhookCreated(webhook)])
      .when([webhookUpdated(webhook)])
      .then(async (tx) => {
        expect(await webhooks(tx)).toEqual([
          expect.objectContaining({
            id: webhook,
            name: 'Renamed',
            url: 'https://hooks.example.com/v2',
            events: ['token:updated'],
            notify_email: null,
            status: 'disabled',
            created_at: new Date(created_at),
            modified_by: actor,
            modified_at: new Date(modified_at),
          }),
        ]);
      });
  });

  it('WebhookDeleted removes it; TenantDeleted removes the tenant’s webhooks and no other tenant’s', async () => {
    const [gone, kept, theirs] = [randomUUID(), randomUUID(), randomUUID()];
    await spec()
      .given([webhookCreated(gone), webhookCreated(kept), webhookCreated(theirs, otherTenant)])
      .when([webhookDeleted(gone)])
      .then(async (tx) => {
        expect((await webhooks(tx)).map((row) => row.id).sort()).toEqual([kept, theirs].sort());
      });
    await spec()
      .given([webhookCreated(kept), webhookCreated(theirs, otherTenant)])
      .when([tenantDeleted(tenant)])
      .then(async (tx) => {
        expect((await webhooks(tx)).map((row) => row.id)).toEqual([theirs]);
      });
  });
});
