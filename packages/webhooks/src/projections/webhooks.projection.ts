import { onTenantDeleted, type Projection, type TenantDeletedEvent } from '@tokenvault/cqrs';
import type { PoolClient } from '@tokenvault/platform';
import type { RecordedOf } from '@tokenvault/eventstore';
import type { WebhookLifecycleEvent } from '../domain/webhooks.events.ts';

// The signing keys are read from their stream (they have no read model).
type Handled = WebhookLifecycleEvent | TenantDeletedEvent;

const ownedTables = ['webhooks'] as const;

const tenantDeleted = onTenantDeleted(ownedTables);

export const webhooksProjection: Projection<Handled> = {
  name: 'webhooks',
  tables: ownedTables,
  handles: ['WebhookCreated', 'WebhookUpdated', 'WebhookDeleted', 'WebhookDisabled', 'TenantDeleted'],
  async apply(events, tx) {
    for (const event of events) await applyOne(event, tx);
  },
};

async function applyOne(event: RecordedOf<Handled>, tx: PoolClient): Promise<void> {
  switch (event.type) {
    case 'WebhookCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO webhooks (tenant_id, id, name, url, events, notify_email, status, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
        [
          d.tenant_id,
          d.webhook_id,
          d.name,
          d.url,
          d.events,
          d.notify_email ?? null,
          d.status,
          d.created_by,
          d.created_at,
        ],
      );
      return;
    }
    case 'WebhookUpdated': {
      const d = event.data;
      await tx.query(
        `UPDATE webhooks SET name = $3, url = $4, events = $5, notify_email = $6, status = $7,
                             modified_by = $8, modified_at = $9
           WHERE tenant_id = $1 AND id = $2`,
        [
          d.tenant_id,
          d.webhook_id,
          d.name,
          d.url,
          d.events,
          d.notify_email ?? null,
          d.status,
          d.modified_by,
          d.modified_at,
        ],
      );
      return;
    }
    case 'WebhookDeleted': {
      const d = event.data;
      await tx.query('DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2', [d.tenant_id, d.webhook_id]);
      return;
    }
    case 'WebhookDisabled': {
      const d = event.data;
      await tx.query(
        `UPDATE webhooks SET status = 'disabled', modified_at = $3 WHERE tenant_id = $1 AND id = $2`,
        [d.tenant_id, d.webhook_id, d.disabled_at],
      );
      return;
    }
    case 'TenantDeleted':
      await tenantDeleted(tx, [event.data]);
      return;
    default: {
      // Fails to compile when an event type of the context has no case here.
      const unhandled: never = event;
      throw new Error(`no projection for ${(unhandled as Handled).type}`);
    }
  }
}
