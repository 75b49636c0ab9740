import { withTenant, type Pool } from '@tokenvault/platform';
import type { MemberResponse } from '@tokenvault/contracts';

interface MemberRow {
  id: string;
  tenant_id: string;
  role: MemberResponse['role'];
  user_id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  picture: string | null;
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

function toResponse(row: MemberRow): MemberResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    role: row.role,
    user: {
      id: row.user_id,
      ...(row.email === null ? {} : { email: row.email }),
      ...(row.first_name === null ? {} : { first_name: row.first_name }),
      ...(row.last_name === null ? {} : { last_name: row.last_name }),
      ...(row.picture === null ? {} : { picture: row.picture }),
    },
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
}

/** Members with their users, as the tenant (row-level security applies to both tables). */
export class MemberQueries {
  private readonly appPool: Pool;
  constructor(appPool: Pool) {
    this.appPool = appPool;
  }

  async list(
    tenantId: string,
    filter: { userIds: string[] },
    page: number,
    size: number,
  ): Promise<{ items: MemberResponse[]; total: number }> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const where = `m.tenant_id = $1 AND (cardinality($2::uuid[]) = 0 OR m.user_id = ANY($2::uuid[]))`;
      const [rows, count] = await Promise.all([
        client.query<MemberRow>(
          `SELECT m.id, m.tenant_id, m.role, m.user_id, u.email, u.first_name, u.last_name, u.picture,
                  m.created_by, m.created_at, m.modified_by, m.modified_at
             FROM tenant_members m LEFT JOIN users u ON u.id = m.user_id
            WHERE ${where}
            ORDER BY m.created_at, m.id LIMIT $3 OFFSET $4`,
          [tenantId, filter.userIds, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          `SELECT count(*)::int AS total FROM tenant_members m WHERE ${where}`,
          [tenantId, filter.userIds],
        ),
      ]);
      return { items: rows.rows.map(toResponse), total: count.rows[0]?.total ?? 0 };
    });
  }

  /** Whether a user with this e-mail address (without case) is a member of the tenant. */
  async hasMemberWithEmail(tenantId: string, email: string): Promise<boolean> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query(
        `SELECT 1 FROM tenant_members m JOIN users u ON u.id = m.user_id
          WHERE m.tenant_id = $1 AND lower(u.email) = lower($2) LIMIT 1`,
        [tenantId, email],
      );
      return (result.rowCount ?? 0) > 0;
    });
  }
}
