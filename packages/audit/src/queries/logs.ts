import { badRequest, withTenant, type Pool } from '@tokenvault/platform';
import type { ListLogsQuery, LogResponse } from '@tokenvault/contracts';

interface LogRow {
  tenant_id: string;
  actor_id: string | null;
  actor_type: string | null;
  entity_type: string;
  entity_id: string;
  operation: LogResponse['operation'];
  message: string;
  created_at: Date;
  position: number;
}

interface Cursor {
  createdAt: string;
  position: number;
}

/** toISOString's form, years 1000–9999: the audit log holds nothing outside them. */
const cursorInstant = /^[1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const encodeCursor = (row: LogRow) =>
  Buffer.from(JSON.stringify([row.created_at.toISOString(), row.position])).toString('base64url');

/**
 * Only exactly what encodeCursor writes: a forged cursor must not reach PostgreSQL with a date
 * it cannot hold or a value of another type.
 */
function decodeCursor(value: string): Cursor {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  if (Array.isArray(decoded) && decoded.length === 2) {
    const [createdAt, position] = decoded as unknown[];
    if (
      typeof createdAt === 'string' &&
      cursorInstant.test(createdAt) &&
      // Also refuses dates that do not exist (2026-02-30), which Date would roll over.
      !Number.isNaN(Date.parse(createdAt)) &&
      new Date(createdAt).toISOString() === createdAt &&
      typeof position === 'number' &&
      Number.isSafeInteger(position) &&
      position >= 0
    ) {
      return { createdAt, position };
    }
  }
  throw badRequest('The cursor is not one this service gave out.', { 'query.start': ['Invalid cursor'] });
}

function toResponse(row: LogRow): LogResponse {
  return {
    tenant_id: row.tenant_id,
    ...(row.actor_id ? { actor_id: row.actor_id } : {}),
    ...(row.actor_type ? { actor_type: row.actor_type } : {}),
    entity_type: row.entity_type,
    entity_id: row.entity_id,
    operation: row.operation,
    message: row.message,
    created_at: row.created_at.toISOString(),
  };
}

/** Newest first; page/size or a cursor; one extra row tells whether a next page exists. */
export async function listLogs(appPool: Pool, tenantId: string, query: ListLogsQuery) {
  const conditions = ['tenant_id = $1'];
  const values: unknown[] = [tenantId];
  const where = (sql: (placeholder: string) => string, value: unknown) => {
    values.push(value);
    conditions.push(sql(`$${values.length}`));
  };
  if (query.entity_type) where((p) => `entity_type = ${p}`, query.entity_type);
  if (query.entity_id) where((p) => `entity_id = ${p}`, query.entity_id);
  if (query.start_date) where((p) => `created_at >= ${p}`, query.start_date);
  if (query.end_date) where((p) => `created_at < ${p}`, query.end_date);
  const filtered = [...conditions];
  const filterValues = [...values];
  const cursor = query.start ? decodeCursor(query.start) : undefined;
  if (cursor) {
    values.push(cursor.createdAt, cursor.position);
    conditions.push(`(created_at, position) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  const page = query.page ?? 1;
  const offset = cursor ? 0 : (page - 1) * query.size;
  return withTenant(appPool, tenantId, async (client) => {
    const result = await client.query<LogRow>(
      `SELECT tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at, position
       FROM audit_logs WHERE ${conditions.join(' AND ')}
       ORDER BY created_at DESC, position DESC
       LIMIT ${query.size + 1} OFFSET ${offset}`,
      values,
    );
    const rows = result.rows.slice(0, query.size);
    const hasMore = result.rows.length > query.size;
    let total: number | null = null;
    if (!cursor) {
      const count = await client.query<{ total: number }>(
        `SELECT count(*)::int AS total FROM audit_logs WHERE ${filtered.join(' AND ')}`,
        filterValues,
      );
      total = count.rows[0]?.total ?? 0;
    }
    return {
      pagination: {
        total_items: total,
        page_number: cursor ? null : page,
        page_size: query.size,
        total_pages: total === null ? null : Math.ceil(total / query.size),
        next: hasMore && rows.length ? encodeCursor(rows.at(-1)!) : null,
      },
      data: rows.map(toResponse),
    };
  });
}
