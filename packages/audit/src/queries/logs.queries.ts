import { decodeCursor, encodeCursor, withTenant, type Pool } from '@tokenvault/platform';
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
  event_id: string;
  event_hash: Buffer | null;
  tree_head_number: string | null;
}

/** The audit log's tie-break is the event's global position. */
const isPosition = (key: unknown): key is number =>
  typeof key === 'number' && Number.isSafeInteger(key) && key >= 0;

function toResponse(row: LogRow): LogResponse {
  return {
    id: String(row.position),
    event_id: row.event_id,
    event_hash: row.event_hash ? row.event_hash.toString('hex') : null,
    tree_head_number: row.tree_head_number === null ? null : Number(row.tree_head_number),
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
  const cursor = query.start ? decodeCursor(query.start, isPosition) : undefined;
  if (cursor) {
    values.push(cursor.createdAt, cursor.key);
    conditions.push(`(created_at, position) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  const page = query.page ?? 1;
  const offset = cursor ? 0 : (page - 1) * query.size;
  return withTenant(appPool, tenantId, async (client) => {
    const result = await client.query<LogRow>(
      // The tree head of the row's event, when one covers it (verifiable-log's table, under the same
      // tenant policy).
      `SELECT l.tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at, position,
              l.event_id::text AS event_id, t.event_hash, t.tree_head_number::text AS tree_head_number
       FROM (SELECT * FROM audit_logs WHERE ${conditions.join(' AND ')}
             ORDER BY created_at DESC, position DESC
             LIMIT ${query.size + 1} OFFSET ${offset}) l
       LEFT JOIN log_tree_leaves t ON t.event_id = l.event_id
       ORDER BY created_at DESC, position DESC`,
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
        next: hasMore && rows.length ? encodeCursor(rows.at(-1)!.created_at, rows.at(-1)!.position) : null,
      },
      data: rows.map(toResponse),
    };
  });
}
