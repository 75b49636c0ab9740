import { withTenant, type Pool } from '@tokenvault/platform';
import type { InvitationResponse, InvitationStatus } from '@tokenvault/contracts';

interface InvitationRow {
  id: string;
  tenant_id: string;
  email: string;
  status: InvitationStatus;
  expires_at: Date;
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

/** EXPIRED as soon as expires_at has passed by the given clock, whatever the projector did. */
const columns = `id, tenant_id, email,
  CASE WHEN expires_at <= $2::timestamptz THEN 'EXPIRED' ELSE 'PENDING' END AS status,
  expires_at, created_by, created_at, modified_by, modified_at`;

function toResponse(row: InvitationRow): InvitationResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    email: row.email,
    status: row.status,
    expires_at: row.expires_at.toISOString(),
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
}

export function invitationStatusAt(expiresAt: string, now: Date): InvitationStatus {
  return Date.parse(expiresAt) <= now.getTime() ? 'EXPIRED' : 'PENDING';
}

export class InvitationQueries {
  private readonly appPool: Pool;
  constructor(appPool: Pool) {
    this.appPool = appPool;
  }

  async get(tenantId: string, id: string, now: Date): Promise<InvitationResponse | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<InvitationRow>(
        `SELECT ${columns} FROM tenant_invitations WHERE tenant_id = $1 AND id = $3`,
        [tenantId, now.toISOString(), id],
      );
      return result.rows[0] && toResponse(result.rows[0]);
    });
  }

  async list(
    tenantId: string,
    filter: { status?: InvitationStatus | undefined },
    page: number,
    size: number,
    now: Date,
  ): Promise<{ items: InvitationResponse[]; total: number }> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const where = `tenant_id = $1 AND ($3::text IS NULL
        OR ($3 = 'EXPIRED' AND expires_at <= $2::timestamptz)
        OR ($3 = 'PENDING' AND expires_at > $2::timestamptz))`;
      const parameters = [tenantId, now.toISOString(), filter.status ?? null];
      const [rows, count] = await Promise.all([
        client.query<InvitationRow>(
          `SELECT ${columns} FROM tenant_invitations WHERE ${where}
            ORDER BY created_at, id LIMIT $4 OFFSET $5`,
          [...parameters, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          `SELECT count(*)::int AS total FROM tenant_invitations WHERE ${where}`,
          parameters,
        ),
      ]);
      return { items: rows.rows.map(toResponse), total: count.rows[0]?.total ?? 0 };
    });
  }
}
