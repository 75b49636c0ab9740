// Data for the audit-log scenarios of the benchmark: a tenant with a million audit-log rows,
// written as the projection would, and the GET /logs paths that read them.
import type pg from 'pg';

const logDays = 100;
const logsStart = Date.UTC(2026, 0, 1);
const dayMs = 86_400_000;

/**
 * Writes `count` rows as the audit projection would (one every 8.64 s over 100 days, 10 rows per
 * entity), in one statement, then refreshes the planner's statistics.
 */
export async function seedLogs(pool: pg.Pool, tenantId: string, count: number): Promise<void> {
  const spacingMs = (logDays * dayMs) / count;
  await pool.query(
    `INSERT INTO audit_logs (tenant_id, created_at, position, event_id, actor_id, actor_type,
                             entity_type, entity_id, operation, message)
     SELECT $1, to_timestamp(($2::float8 + g * $3::float8) / 1000), 1000000000 + g, gen_random_uuid(), $1,
            'application', (ARRAY['token', 'card', 'bank'])[1 + g % 3], 'bench-' || (g % ($4::int / 10)),
            (ARRAY['create', 'read', 'read', 'update'])[1 + g % 4], 'Token retrieved'
     FROM generate_series(1, $4::int) AS g`,
    [tenantId, logsStart, spacingMs, count],
  );
  await pool.query('VACUUM ANALYZE audit_logs');
}

/** Paths for the log scenarios, cycled by the load generator. */
export function logPaths(count: number) {
  const spacingMs = (logDays * dayMs) / count;
  const day = (index: number) => new Date(logsStart + (index % logDays) * dayMs).toISOString().slice(0, 10);
  const entity = (index: number) => `bench-${(index * 7919) % (count / 10)}`;
  // A cursor halfway through a day: the service's cursor is base64url of [created_at, position].
  const deepCursor = (index: number) => {
    const g = Math.round(((index % logDays) * dayMs + dayMs / 2) / spacingMs);
    const createdAt = new Date(logsStart + g * spacingMs).toISOString();
    return Buffer.from(JSON.stringify([createdAt, 1_000_000_000 + g])).toString('base64url');
  };
  return {
    byEntity: (index: number) => `/logs?entity_id=${entity(index)}`,
    byDay: (index: number) => `/logs?start_date=${day(index)}&end_date=${day(index + 1)}`,
    deepCursor: (index: number) =>
      `/logs?start_date=${day(index)}&end_date=${day(index + 1)}&start=${deepCursor(index)}`,
  };
}
