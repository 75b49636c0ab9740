import type { WebhookDeliveryJob } from '../deliveries/delivery-job.ts';
import { withTenant, type Pool } from '@tokenvault/platform';
import type { WebhookDeliveryResponse, WebhookResponse, WebhookStatus } from '@tokenvault/contracts';

export interface WebhookRow {
  id: string;
  tenant_id: string;
  name: string;
  url: string;
  events: string[];
  notify_email: string | null;
  status: WebhookStatus;
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

/** A webhook as answered. */
export const webhookResponse = (row: WebhookRow): WebhookResponse => ({
  id: row.id,
  tenant_id: row.tenant_id,
  status: row.status,
  name: row.name,
  url: row.url,
  ...(row.notify_email === null ? {} : { notify_email: row.notify_email }),
  events: row.events,
  ...(row.created_by ? { created_by: row.created_by } : {}),
  ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
  ...(row.modified_by ? { modified_by: row.modified_by } : {}),
  ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
});

/** Reads run as the tenant: row-level security hides every other tenant's webhooks. */
export class WebhookQueries {
  private readonly appPool: Pool;

  constructor(appPool: Pool) {
    this.appPool = appPool;
  }

  async get(tenantId: string, id: string): Promise<WebhookResponse | undefined> {
    const row = await withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<WebhookRow>(
        'SELECT * FROM webhooks WHERE tenant_id = $1 AND id = $2',
        [tenantId, id],
      );
      return result.rows[0];
    });
    return row ? webhookResponse(row) : undefined;
  }

  async list(
    tenantId: string,
    page: number,
    size: number,
  ): Promise<{ items: WebhookResponse[]; total: number }> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const [rows, count] = await Promise.all([
        client.query<WebhookRow>(
          'SELECT * FROM webhooks WHERE tenant_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3',
          [tenantId, size, (page - 1) * size],
        ),
        client.query<{ total: number }>('SELECT count(*)::int AS total FROM webhooks WHERE tenant_id = $1', [
          tenantId,
        ]),
      ]);
      return { items: rows.rows.map(webhookResponse), total: count.rows[0]?.total ?? 0 };
    });
  }

  /** A webhook's deliveries, newest first (row-level security: the tenant's only). */
  async deliveries(
    tenantId: string,
    webhookId: string,
    page: number,
    size: number,
  ): Promise<{ items: WebhookDeliveryResponse[]; total: number }> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const [rows, count] = await Promise.all([
        client.query<DeliveryRow>(
          `SELECT id, webhook_id, event_id, event_type, status, attempts, response_status, error,
                  created_at, last_attempt_at
             FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2
             ORDER BY created_at DESC, id LIMIT $3 OFFSET $4`,
          [tenantId, webhookId, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          'SELECT count(*)::int AS total FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2',
          [tenantId, webhookId],
        ),
      ]);
      return { items: rows.rows.map(deliveryResponse), total: count.rows[0]?.total ?? 0 };
    });
  }

  /** A delivery as it was sent (public data only), while the history keeps it: what a redelivery sends. */
  async sentDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
  ): Promise<WebhookDeliveryJob | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<{ delivery: WebhookDeliveryJob | null }>(
        'SELECT delivery FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3',
        [tenantId, webhookId, deliveryId],
      );
      return result.rows[0]?.delivery ?? undefined;
    });
  }
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: WebhookDeliveryResponse['status'];
  attempts: number;
  response_status: number | null;
  error: string | null;
  created_at: Date;
  last_attempt_at: Date;
}

const deliveryResponse = (row: DeliveryRow): WebhookDeliveryResponse => ({
  id: row.id,
  webhook_id: row.webhook_id,
  event_id: row.event_id,
  event_type: row.event_type,
  status: row.status,
  attempts: row.attempts,
  ...(row.response_status === null ? {} : { response_status: row.response_status }),
  ...(row.error === null ? {} : { error: row.error }),
  created_at: row.created_at.toISOString(),
  last_attempt_at: row.last_attempt_at.toISOString(),
});
