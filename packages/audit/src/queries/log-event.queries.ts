import { withTenant, type Pool } from '@tokenvault/platform';

/** The event of one of the tenant's log rows (by its id, the row's position), under row-level security. */
export async function findLogEvent(
  appPool: Pool,
  tenantId: string,
  logId: string,
): Promise<string | undefined> {
  return withTenant(appPool, tenantId, async (client) => {
    const { rows } = await client.query<{ event_id: string }>(
      'SELECT event_id::text AS event_id FROM audit_logs WHERE tenant_id = $1 AND position = $2',
      [tenantId, logId],
    );
    return rows[0]?.event_id;
  });
}
