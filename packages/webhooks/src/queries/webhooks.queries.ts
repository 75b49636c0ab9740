import { withTenant, type Pool } from '@tokenvault/platform';
import type { WebhookResponse, WebhookStatus } from '@tokenvault/contracts';

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
}
